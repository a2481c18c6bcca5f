#include "comm/network_model.h"

#include <stdexcept>

namespace cedar {

const std::vector<NetworkProfile>& network_profiles() {
  // Latencies are typical MPI small-message latencies of each fabric; bandwidth is the line rate.
  static const std::vector<NetworkProfile> profiles = {
      {"1gbe", 50e-6, 8.0 / 1e9},    {"10gbe", 20e-6, 8.0 / 10e9},    {"25gbe", 10e-6, 8.0 / 25e9},
      {"100gbe", 5e-6, 8.0 / 100e9}, {"ib-hdr", 1.5e-6, 8.0 / 200e9},
  };
  return profiles;
}

std::vector<std::string> network_profile_names() {
  std::vector<std::string> names;
  for (const auto& p : network_profiles()) names.push_back(p.name);
  return names;
}

const NetworkProfile& find_network_profile(const std::string& name) {
  std::string known;
  for (const auto& p : network_profiles()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw std::invalid_argument("unknown network profile '" + name + "' (known: " + known + ")");
}

}  // namespace cedar
