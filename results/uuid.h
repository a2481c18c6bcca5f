#pragma once
// Globally unique identifiers (RFC 4122 version 4, random; libuuid) for runs and lock owners.
#include <string>

namespace cedar {

// e.g. "1b4e28ba-2fa1-4d2e-883f-0016d3cca427": lowercase, 36 characters.
std::string new_uuid();

}  // namespace cedar
