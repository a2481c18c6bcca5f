#include "config/step_range.h"

#include <cctype>
#include <stdexcept>

namespace cedar {
namespace {

// A non-negative decimal number filling `digits` entirely.
bool parse_count(const std::string& digits, int64_t& out) {
  if (digits.empty() || digits.size() > 18) return false;
  out = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

}  // namespace

StepRange parse_step_range(const std::string& text) {
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument("'" + text + "' " + why +
                                 " (expected FIRST-LAST or N, steps counted from 0, e.g. 10-14)");
  };
  StepRange r;
  const size_t dash = text.find('-');
  if (dash == std::string::npos) {
    if (!parse_count(text, r.first)) throw fail("is not a step number");
    r.last = r.first;
    return r;
  }
  if (!parse_count(text.substr(0, dash), r.first) || !parse_count(text.substr(dash + 1), r.last))
    throw fail("is not a range of step numbers");
  if (r.last < r.first) throw fail("ends before it starts");
  return r;
}

}  // namespace cedar
