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
// A fit may also hold size bands (`cedar network fit --bands`): α and β fitted on the sizes from
// one edge to the next, for a link whose rate changes with the message size (Open MPI's large
// allreduces over TCP run slower than its small ones). cost() with a message size uses the band
// that holds it; without one, the fit over every size.
//
// Allreduce schemes (network.allreduce; comm/allreduce_algorithms.h runs them over point-to-point
// messages). Costs on the critical path of P ranks, each with one full-duplex link (a rank sends
// one message and receives one at a time), for S bytes:
//   library, ring:     L = 2(P-1),                  B = 2(P-1)/P * S
//   halving_doubling:  L = 2 log2 P' (+2),          B = 2(P'-1)/P' * S (+2S)
//                      P' = the largest power of two <= P; the terms in parentheses only when
//                      P' < P (the extra ranks' data in before, the result out after)
//   tree:              L = D(P),                    B = D(P) * S
//                      D(P): the messages on the critical path of a binary-tree reduce (a parent
//                      receives its right child, then its left) and broadcast (left child first);
//                      2 ceil(log2 P) for P <= 6, more from 7 on (D(7) = D(8) = 8) where one
//                      parent's two children both wait for one link.
//   two_level:         intra: tree on the R ranks of a node; inter: ring on the P/R leaders;
//                      each level on its own profile, their sum on one.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cedar {

struct AlphaBeta {
  double alpha = 0, beta = 0;
};

// α and β for messages of from_bytes bytes up to the next band's from_bytes (the first band's is
// 0; the last one's reaches every larger size).
struct SizeBand {
  double from_bytes = 0;
  AlphaBeta fit;
};
// A size as band edges are written: "8 MiB", "256 KiB", "1000 B" (the largest binary unit that
// divides it).
std::string byte_size_text(double bytes);

struct NetworkProfile {
  std::string name;
  double alpha = 0;  // seconds per message (latency)
  double beta = 0;   // seconds per byte (1 / bandwidth)
  // Where it was measured (free text; empty: nominal constants, never measured).
  std::string measured_on = {};
  // Fits per collective (allreduce, allgather, allgatherv, broadcast, sendrecv) and P.
  std::map<std::string, std::map<int, AlphaBeta>> collectives = {};
  // Size bands of some of those fits, per op and P, in increasing from_bytes (the first at 0).
  std::map<std::string, std::map<int, std::vector<SizeBand>>> size_bands = {};
  double seconds(int64_t latency_steps, int64_t bus_bytes) const {
    return alpha * double(latency_steps) + beta * double(bus_bytes);
  }
  // The α and β for `op` on `world` ranks (send is costed as sendrecv).
  AlphaBeta fit_for(const std::string& op, int world) const;
  // The same fit's band that holds messages of `message_bytes` (S, or s per rank for allgather[v]
  // as calibrate times them) where the fit has bands; fit_for(op, world) otherwise.
  AlphaBeta fit_for(const std::string& op, int world, double message_bytes) const;
  double cost(const std::string& op, int world, double latency_steps, double bus_bytes) const {
    const AlphaBeta f = fit_for(op, world);
    return f.alpha * latency_steps + f.beta * bus_bytes;
  }
  double cost(const std::string& op, int world, double latency_steps, double bus_bytes,
              double message_bytes) const {
    const AlphaBeta f = fit_for(op, world, message_bytes);
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

enum class AllreduceScheme { library, ring, halving_doubling, tree, two_level };
// "library, ring, halving_doubling, tree, two_level" in that order.
const std::vector<std::string>& allreduce_scheme_names();
std::string allreduce_scheme_name(AllreduceScheme scheme);
// Throws std::invalid_argument naming the value and the accepted names.
AllreduceScheme parse_allreduce_scheme(const std::string& name);
// The scheme of a sub-communicator of level `level` ("intra", "inter", ...) split from a
// communicator running `scheme`: two_level is itself two levels, so its node's level ("intra")
// runs tree and every other level ring; the other schemes run on every level.
AllreduceScheme allreduce_scheme_for_level(AllreduceScheme scheme, const std::string& level);

// The α and β terms of one allreduce (see the top of this file).
struct AllreduceTerms {
  double latency_steps = 0, bus_bytes = 0;
};
// library, ring, halving_doubling and tree on `world` ranks; two_level throws
// std::invalid_argument (it needs the ranks of a node: two_level_allreduce_terms).
AllreduceTerms allreduce_terms(AllreduceScheme scheme, int world, double bytes);
struct TwoLevelTerms {
  AllreduceTerms intra, inter;
};
// Throws std::invalid_argument unless ranks_per_node (>= 1) divides world.
TwoLevelTerms two_level_allreduce_terms(int world, int ranks_per_node, double bytes);
// D(P) above.
int64_t binary_tree_allreduce_steps(int world);

inline int64_t allreduce_latency_steps(int world) { return world <= 1 ? 0 : 2 * (world - 1); }
inline int64_t allgather_latency_steps(int world) { return world <= 1 ? 0 : world - 1; }
inline int64_t broadcast_latency_steps(int world) {
  int64_t steps = 0;
  for (int reach = 1; reach < world; reach *= 2) ++steps;
  return steps;
}

}  // namespace cedar
