#pragma once
// Gradient fusion buckets: parameters assigned in reverse model order (the order backward
// produces their gradients) to contiguous fp32 buffers, of about `bucket_bytes` each
// (train.fusion: size) or as a grouping from the network model (runner/train/fusion_schedule.h).
#include <vector>

#include "algorithms/algorithm.h"
#include "runner/train/fusion_schedule.h"

namespace cedar {

std::vector<GradBucket> make_buckets(const std::vector<NamedTensor>& params, int64_t bucket_bytes);

// Bucket b holds the groups[b] parameters after those of the buckets before it, in reverse model
// order. Throws std::invalid_argument unless the groups cover every parameter exactly once.
std::vector<GradBucket> buckets_of_groups(const std::vector<NamedTensor>& params,
                                          const FusionGroups& groups);

// The parameters in reverse model order as fusion layers: fp32 bytes, and backward's time to each
// gradient from `ready_seconds` (per parameter in model order: when backward produced it, from
// backward's start; empty: none). A bucket is ready with its last-ready gradient, so a gradient
// produced before one that precedes it in the order counts as ready with that one.
std::vector<FusionLayer> fusion_layers(const std::vector<NamedTensor>& params,
                                       const std::vector<double>& ready_seconds = {});

// Copies every parameter's .grad() into its bucket view (zeros where a gradient is missing).
void gather_gradients(std::vector<GradBucket>& buckets);

}  // namespace cedar
