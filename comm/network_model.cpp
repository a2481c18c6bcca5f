#include "comm/network_model.h"

#include <cstdlib>
#include <stdexcept>

namespace cedar {

AlphaBeta NetworkProfile::fit_for(const std::string& op, int world) const {
  auto it = collectives.find(op == "send" ? "sendrecv" : op);
  if (it == collectives.end() || it->second.empty()) return {alpha, beta};
  const std::pair<const int, AlphaBeta>* best = nullptr;
  for (const auto& entry : it->second)
    if (!best || std::abs(entry.first - world) <= std::abs(best->first - world)) best = &entry;
  return best->second;
}

std::string NetworkProfile::provenance() const {
  if (!calibrated()) return "nominal (assumed)";
  return "calibrated (measured on " +
         (measured_on.empty() ? std::string("an unnamed link") : measured_on) + ")";
}

const std::vector<NetworkProfile>& network_profiles() {
  // Latencies are typical MPI small-message latencies of each fabric; bandwidth is the line rate.
  static const std::vector<NetworkProfile> profiles = {
      {"1gbe", 50e-6, 8.0 / 1e9},    {"10gbe", 20e-6, 8.0 / 10e9},    {"25gbe", 10e-6, 8.0 / 25e9},
      {"100gbe", 5e-6, 8.0 / 100e9}, {"ib-hdr", 1.5e-6, 8.0 / 200e9},
  };
  return profiles;
}

const std::vector<NetworkProfile>& intra_node_profiles() {
  // Stated values, not measurements of this machine (bench/comm_bench --fit measures those):
  //   shm:    0.5 us per message, 10 GB/s: Open MPI's shared-memory transport (vader) reaches
  //           sub-microsecond small-message latency and about 10 GB/s per copy on current CPUs.
  //   nvlink: 3 us per message (a NCCL kernel's launch and synchronisation), 300 GB/s: NVLink 3's
  //           bandwidth per direction per A100 GPU (NVIDIA A100 datasheet: 600 GB/s both ways).
  static const std::vector<NetworkProfile> profiles = {
      {"shm", 0.5e-6, 1.0 / 10e9},
      {"nvlink", 3e-6, 1.0 / 300e9},
  };
  return profiles;
}

std::vector<std::string> intra_node_profile_names() {
  std::vector<std::string> names;
  for (const auto& p : intra_node_profiles()) names.push_back(p.name);
  return names;
}

std::vector<std::string> network_profile_names() {
  std::vector<std::string> names;
  for (const auto& p : network_profiles()) names.push_back(p.name);
  return names;
}

const NetworkProfile& find_network_profile(const std::string& name) {
  std::string known;
  for (const auto* list : {&network_profiles(), &intra_node_profiles()})
    for (const auto& p : *list) {
      if (p.name == name) return p;
      known += (known.empty() ? "" : ", ") + p.name;
    }
  throw std::invalid_argument("unknown network profile '" + name + "' (known: " + known + ")");
}

}  // namespace cedar
