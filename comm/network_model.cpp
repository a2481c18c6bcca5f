#include "comm/network_model.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "comm/bus_bytes.h"

namespace cedar {

namespace {

const std::string& fitted_op(const std::string& op) {
  static const std::string sendrecv = "sendrecv";
  return op == "send" ? sendrecv : op;
}

// The entry of `fits` at the P nearest `world` (the larger of two equally near); null when none.
const std::pair<const int, AlphaBeta>* nearest(const std::map<int, AlphaBeta>& fits, int world) {
  const std::pair<const int, AlphaBeta>* best = nullptr;
  for (const auto& entry : fits)
    if (!best || std::abs(entry.first - world) <= std::abs(best->first - world)) best = &entry;
  return best;
}

}  // namespace

std::string byte_size_text(double bytes) {
  const auto b = static_cast<int64_t>(bytes);
  if (b >= (1 << 20) && b % (1 << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1 << 10) && b % (1 << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

AlphaBeta NetworkProfile::fit_for(const std::string& op, int world) const {
  auto it = collectives.find(fitted_op(op));
  if (it == collectives.end() || it->second.empty()) return {alpha, beta};
  return nearest(it->second, world)->second;
}

AlphaBeta NetworkProfile::fit_for(const std::string& op, int world, double message_bytes) const {
  auto it = collectives.find(fitted_op(op));
  if (it == collectives.end() || it->second.empty()) return {alpha, beta};
  const auto* fit = nearest(it->second, world);
  auto bands = size_bands.find(fitted_op(op));
  if (bands == size_bands.end()) return fit->second;
  auto at = bands->second.find(fit->first);
  if (at == bands->second.end() || at->second.empty()) return fit->second;
  const SizeBand* holding = &at->second.front();
  for (const SizeBand& band : at->second)
    if (band.from_bytes <= message_bytes) holding = &band;
  return holding->fit;
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

const std::vector<std::string>& allreduce_scheme_names() {
  static const std::vector<std::string> names = {"library", "ring", "halving_doubling", "tree",
                                                 "two_level"};
  return names;
}

std::string allreduce_scheme_name(AllreduceScheme scheme) {
  return allreduce_scheme_names()[static_cast<size_t>(scheme)];
}

AllreduceScheme parse_allreduce_scheme(const std::string& name) {
  const auto& names = allreduce_scheme_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<AllreduceScheme>(i);
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown allreduce scheme '" + name + "' (known: " + known + ")");
}

AllreduceScheme allreduce_scheme_for_level(AllreduceScheme scheme, const std::string& level) {
  if (scheme != AllreduceScheme::two_level) return scheme;
  return level == "intra" ? AllreduceScheme::tree : AllreduceScheme::ring;
}

namespace {

// Messages until every rank of the subtree under heap index i (children 2i+1, 2i+2) has reached
// i (up) or i has reached every rank of it (down), one message per link at a time.
int64_t tree_up(int i, int world) {
  const int left = 2 * i + 1, right = 2 * i + 2;
  if (left >= world) return 0;
  if (right >= world) return tree_up(left, world) + 1;
  return std::max(tree_up(right, world) + 1, tree_up(left, world)) + 1;
}
int64_t tree_down(int i, int world) {
  const int left = 2 * i + 1, right = 2 * i + 2;
  if (left >= world) return 0;
  if (right >= world) return 1 + tree_down(left, world);
  return std::max(1 + tree_down(left, world), 2 + tree_down(right, world));
}

AllreduceTerms ring_terms(int world, double bytes) {
  if (world <= 1) return {};
  return {double(allreduce_latency_steps(world)), allreduce_busbw_factor(world) * bytes};
}

}  // namespace

int64_t binary_tree_allreduce_steps(int world) {
  return world <= 1 ? 0 : tree_up(0, world) + tree_down(0, world);
}

AllreduceTerms allreduce_terms(AllreduceScheme scheme, int world, double bytes) {
  if (world <= 1) return {};
  switch (scheme) {
    case AllreduceScheme::library:
    case AllreduceScheme::ring: return ring_terms(world, bytes);
    case AllreduceScheme::halving_doubling: {
      int core = 1, log2_core = 0;
      while (core * 2 <= world) core *= 2, ++log2_core;
      const bool extra = core < world;
      return {2.0 * log2_core + (extra ? 2 : 0),
              2.0 * (core - 1) / core * bytes + (extra ? 2 * bytes : 0)};
    }
    case AllreduceScheme::tree: {
      const double steps = double(binary_tree_allreduce_steps(world));
      return {steps, steps * bytes};
    }
    case AllreduceScheme::two_level: break;
  }
  throw std::invalid_argument(
      "allreduce_terms: two_level needs the ranks of a node "
      "(two_level_allreduce_terms)");
}

TwoLevelTerms two_level_allreduce_terms(int world, int ranks_per_node, double bytes) {
  if (ranks_per_node < 1 || world % ranks_per_node != 0)
    throw std::invalid_argument("two_level allreduce: " + std::to_string(ranks_per_node) +
                                " ranks per node do not divide " + std::to_string(world) +
                                " ranks into equal nodes");
  return {allreduce_terms(AllreduceScheme::tree, ranks_per_node, bytes),
          ring_terms(world / ranks_per_node, bytes)};
}

}  // namespace cedar
