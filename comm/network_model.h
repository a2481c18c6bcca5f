#pragma once
// The alpha-beta cost model of a network (Hockney 1994; ring costs as in Thakur, Rabenseifner and
// Gropp 2005, "Optimization of Collective Communication Operations in MPICH"): a collective that
// a bandwidth-optimal algorithm runs in L latency steps while pushing B bytes through each link
// costs L*alpha + B*beta.
//   ring allreduce:   L = 2(P-1),       B = 2(P-1)/P * S     (bus bytes)
//   ring allgather:   L = P-1,          B = (P-1)/P * total  (bus bytes)
//   broadcast:        L = ceil(log2 P), B = S
// The metering layer records L and B per step, so any profile's time can be computed afterwards.
// No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

namespace cedar {

struct NetworkProfile {
  std::string name;
  double alpha = 0;  // seconds per message (latency)
  double beta = 0;   // seconds per byte (1 / bandwidth)
  double seconds(int64_t latency_steps, int64_t bus_bytes) const {
    return alpha * double(latency_steps) + beta * double(bus_bytes);
  }
};

// Built-in profiles: 1gbe, 10gbe, 25gbe, 100gbe, ib-hdr (200 Gb/s InfiniBand).
const std::vector<NetworkProfile>& network_profiles();
std::vector<std::string> network_profile_names();
// Built-in profiles of the links inside one node (network.intra_profile): shm (MPI over shared
// memory between processes) and nvlink (NCCL between GPUs over NVLink). Kept apart from the
// networks above, which the comparison tables and the crossover sweep.
const std::vector<NetworkProfile>& intra_node_profiles();
std::vector<std::string> intra_node_profile_names();
// Either list's profile. Throws std::invalid_argument naming the unknown profile and the known
// ones.
const NetworkProfile& find_network_profile(const std::string& name);

inline int64_t allreduce_latency_steps(int world) { return world <= 1 ? 0 : 2 * (world - 1); }
inline int64_t allgather_latency_steps(int world) { return world <= 1 ? 0 : world - 1; }
inline int64_t broadcast_latency_steps(int world) {
  int64_t steps = 0;
  for (int reach = 1; reach < world; reach *= 2) ++steps;
  return steps;
}

}  // namespace cedar
