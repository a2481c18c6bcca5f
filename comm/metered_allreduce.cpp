// The metering layer's allreduce schemes (metered_communicator.h): the scheme runs over the
// backend's point-to-point messages, counted by PointToPointTally.
#include "comm/allreduce_algorithms.h"
#include "comm/metered_communicator.h"
#include "comm/point_to_point_tally.h"

namespace cedar {
void MeteredCommunicator::use_allreduce(AllreduceScheme scheme, int ranks_per_node) {
  if (scheme == AllreduceScheme::two_level && (ranks_per_node < 1 || size() % ranks_per_node))
    throw CommError("allreduce two_level: " + std::to_string(ranks_per_node) +
                    " ranks per node do not divide the " + std::to_string(size()) +
                    " ranks into equal nodes");
  scheme_ = scheme;
  ranks_per_node_ = ranks_per_node;
}

const NetworkProfile* MeteredCommunicator::level_emulation(const std::string& level) const {
  if (!emulate_) return nullptr;
  auto it = level_profiles_.find(level);
  return it != level_profiles_.end() ? it->second : emulate_;
}

void MeteredCommunicator::allreduce_by_scheme(at::Tensor& t) {
  if (scheme_ == AllreduceScheme::two_level) return allreduce_two_level(t);
  const double t0 = clock();
  PointToPointTally links(inner_, emulate_);
  allreduce_with(scheme_, links, t);
  // Emulated message by message already.
  add("allreduce",
      {1, t.numel(), int64_t(t.nbytes()), links.bytes_sent(), links.messages(), clock() - t0});
}

void MeteredCommunicator::allreduce_two_level(at::Tensor& t) {
  const double t0 = clock();
  PointToPointTally intra(inner_, level_emulation("intra")),
      inter(inner_, level_emulation("inter"));
  two_level_allreduce(intra, inter, t, ranks_per_node_);
  const double seconds = clock() - t0;
  const int nodes = size() / ranks_per_node_;
  const bool leader = rank() % ranks_per_node_ == 0;
  // Each level as a sub-communicator's traffic (absorb); the leaders' ring is the inter level's
  // time, the rest (the tree inside the node, waiting for the leader) the intra level's.
  if (ranks_per_node_ > 1) {
    level_ranks_["intra"] = ranks_per_node_;
    absorb("intra", "allreduce",
           {1, t.numel(), int64_t(t.nbytes()), intra.bytes_sent(), intra.messages(),
            seconds - inter.seconds()});
  }
  if (nodes > 1 && leader) {
    level_ranks_["inter"] = nodes;
    absorb(
        "inter", "allreduce",
        {1, t.numel(), int64_t(t.nbytes()), inter.bytes_sent(), inter.messages(), inter.seconds()});
  }
}

}  // namespace cedar
