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
//
// A calibrated profile (`cedar network calibrate`, comm/network_profile_file.h) also holds α and β
// fitted per collective and per rank count P on a real link. cost() uses the fit of the op at the
// nearest P measured (the larger of two equally near), and the profile's own alpha and beta for
// an op without fits (barrier, or one the file leaves out). Nearest, not interpolated: α and β
// are per step and per byte already, so the model's own form carries a fit to other P.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cedar {

struct AlphaBeta {
  double alpha = 0, beta = 0;
};

struct NetworkProfile {
  std::string name;
  double alpha = 0;  // seconds per message (latency)
  double beta = 0;   // seconds per byte (1 / bandwidth)
  // Where it was measured (free text; empty: nominal constants, never measured).
  std::string measured_on = {};
  // Fits per collective (allreduce, allgather, allgatherv, broadcast, sendrecv) and P.
  std::map<std::string, std::map<int, AlphaBeta>> collectives = {};
  double seconds(int64_t latency_steps, int64_t bus_bytes) const {
    return alpha * double(latency_steps) + beta * double(bus_bytes);
  }
  // The α and β for `op` on `world` ranks (send is costed as sendrecv).
  AlphaBeta fit_for(const std::string& op, int world) const;
  double cost(const std::string& op, int world, double latency_steps, double bus_bytes) const {
    const AlphaBeta f = fit_for(op, world);
    return f.alpha * latency_steps + f.beta * bus_bytes;
  }
  bool calibrated() const { return !measured_on.empty() || !collectives.empty(); }
  // "nominal (assumed)" or "calibrated (measured on <measured_on>)".
  std::string provenance() const;
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
