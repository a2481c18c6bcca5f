#pragma once
// Network profiles from a YAML file, besides the built-in five (network_model.h):
//   networks:
//     - {name: campus-wan, alpha: 1.0e-3, bandwidth_gbps: 0.1}   # alpha in seconds per message
//     - {name: nvlink, alpha: 2.0e-6, beta: 3.3e-12}              # beta in seconds per byte
// Each entry gives alpha and exactly one of beta or bandwidth_gbps (10^9 bits per second).
// No LibTorch here.
#include <string>
#include <vector>

#include "comm/network_model.h"

namespace cedar {

// Throws ConfigError naming file:line:column and the key for a malformed entry, a name that
// repeats one in the file or a built-in one, or a missing file.
std::vector<NetworkProfile> load_network_profiles(const std::string& path);

}  // namespace cedar
