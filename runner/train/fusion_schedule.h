#pragma once
// Tensor fusion from the network model: which consecutive gradients share one bucket, so that the
// last exchange of a step ends as early as the alpha-beta model predicts it can. No LibTorch here.
//
// The model (Shi, Chu and Li, "MG-WFBP: Efficient Data Communication for Distributed Synchronous
// SGD Algorithms", INFOCOM 2019, Sec. III): backward produces the gradients of layers in turn,
// layer i's after backward_seconds of the layers up to it; one allreduce of M bytes costs
// t(M) = a + b M; a bucket is exchanged once its last gradient is ready and the previous bucket's
// exchange has ended (train.overlap's single exchange thread, runner/train/backward_overlap.h):
//   start(g) = max(end(g-1), ready(last layer of g)),  end(g) = start(g) + t(bytes of g).
// The predicted iteration end is the last bucket's end, counted from backward's start (forward and
// the update add the same to every grouping).
//
// Groupings are written as the number of consecutive layers in each bucket, in backward order:
// {2, 1} puts the first two gradients backward produces in bucket 0 and the third in bucket 1.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/network_model.h"

namespace cedar {

// One parameter tensor's gradient, in the order backward produces it.
struct FusionLayer {
  int64_t bytes = 0;
  // Backward's time from the previous gradient (backward's start for the first) to this one.
  double backward_seconds = 0;
};

// The time of one allreduce of M bytes: startup + per_byte * M (MG-WFBP's a and b).
struct AllreduceCost {
  double startup = 0;
  double per_byte = 0;
  double seconds(double bytes) const { return startup + per_byte * bytes; }
};

using FusionGroups = std::vector<int64_t>;

// The allreduce cost of network.allreduce `scheme` on `world` ranks (comm/network_model.h's terms),
// with each profile's fit of the allreduce at that rank count (NetworkProfile::cost): `net` for
// the ranks' one level, or between nodes under two_level, whose tree inside a node of
// `ranks_per_node` ranks is on `intra`. Throws std::invalid_argument for two_level with nodes
// that do not divide the ranks.
AllreduceCost allreduce_cost(AllreduceScheme scheme, int world, const NetworkProfile& net,
                             const NetworkProfile& intra, int ranks_per_node);

// The predicted end of the last exchange (see the top of this file). Throws std::invalid_argument
// when the groups do not cover the layers exactly once or one is empty.
double predicted_exchange_end(const std::vector<FusionLayer>& layers, const FusionGroups& groups,
                              const AllreduceCost& cost);

// Fixed-size buckets (train.fusion: size, runner/train/buckets.h): layers packed in turn, a bucket
// closed when the next layer would take it past bucket_bytes (a layer larger than that alone).
FusionGroups size_groups(const std::vector<FusionLayer>& layers, int64_t bucket_bytes);

// MG-WFBP's merge rule (Sec. IV): going through the layers in backward order, the
// next layer joins the current bucket when its gradient is ready less than the startup time a
// after the current bucket's exchange would start, start(current) + a; the starts follow the
// merges made so far. A single pass; on some layer lists (tests/unit/fusion_schedule_test.cpp)
// its grouping is not the model's minimum, which optimal_groups finds.
FusionGroups mgwfbp_groups(const std::vector<FusionLayer>& layers, const AllreduceCost& cost);

// The grouping of least predicted exchange end among all 2^(L-1) contiguous ones, and of those
// (to rounding) the one of fewest buckets, by dynamic programming over the number of buckets k and
// the last bucket's first layer i (O(L^3)): the least end of the first j layers in k buckets is
// min over i of max(least end of the first i layers in k-1 buckets, ready(j)) + t(bytes of layers
// i..j-1); a prefix that ends earlier never makes a later end larger.
FusionGroups optimal_groups(const std::vector<FusionLayer>& layers, const AllreduceCost& cost);

// train.fusion: auto's candidates: 1, 2, 4, ..., 64 MiB and train.bucket_mb, ascending, once each.
std::vector<double> bucket_size_candidates_mib(double configured_mib);

struct BucketSizeChoice {
  double bucket_mib = 0;
  FusionGroups groups;
  double predicted_seconds = 0;
};
// The candidate bucket size whose size_groups have the least predicted exchange end (the
// smallest such size on a tie). `candidates_mib` must not be empty.
BucketSizeChoice autotune_bucket_size(const std::vector<FusionLayer>& layers,
                                      const AllreduceCost& cost,
                                      const std::vector<double>& candidates_mib);

// train.fusion's values.
enum class FusionMode { size, mgwfbp, optimal, autotune };
const std::vector<std::string>& fusion_mode_names();  // size, mgwfbp, optimal, auto
// Throws std::invalid_argument naming the value and the accepted names.
FusionMode parse_fusion_mode(const std::string& name);

// A grouping chosen for a run, with what the model predicts for it and for fixed-size buckets of
// train.bucket_mb.
struct FusionPlan {
  FusionMode mode = FusionMode::size;
  FusionGroups groups;
  double predicted_seconds = 0;
  double size_predicted_seconds = 0;  // train.bucket_mb's fixed-size buckets
  double bucket_mib = 0;              // the size chosen by auto; train.bucket_mb otherwise
};
FusionPlan plan_fusion(FusionMode mode, const std::vector<FusionLayer>& layers,
                       const AllreduceCost& cost, double bucket_mib);

}  // namespace cedar
