#pragma once
// The slices of train.schedule: priority. Each fusion bucket's flat buffer is cut into stretches of
// at most `slice_elements` gradients (the last one of a bucket shorter), which the exchange thread
// exchanges one at a time in priority order among those ready on every rank
// (runner/train/priority_schedule.h).
//
// Rule (P3, Jayarajan et al., "Priority-based Parameter Propagation for Distributed DNN Training",
// SysML 2019: parameter slicing and priority-based update; ByteScheduler, Peng et al., "A Generic
// Communication Scheduler for Distributed DNN Training Acceleration", SOSP 2019: tensor
// partitioning and priority queue; its scheduling algorithm as bytescheduler/docs/scheduling.md of
// github.com/bytedance/byteps states it): a slice's priority is the position in model order of the
// first layer it holds, the one the next forward pass needs first, so the first layers' slices
// (whose gradients backward produces last) go first. Both papers cut each layer's tensor on its
// own; here the cut runs through the bucket, whose parameters lie in reverse model order, so a
// slice may hold the end of one parameter and the start of the next (their priority is the earlier
// layer's) and small parameters share a slice as they share a bucket. That is exact for the
// algorithms train.schedule: priority accepts, whose exchange treats every element on its own
// (runner/train/exchange_schedule.h). Sizes: ByteScheduler partitions at 1,000,000 parameters by
// default (bytescheduler/common/bytecore.py; its documentation suggests 8,000,000 for all-reduce),
// P3's released code slices at 40,000 (MXNET_KVSTORE_BIGARRAY_BOUND in src/kvstore/kvstore_dist.h
// of github.com/anandj91/p3); train.slice_kb sets the size here. No LibTorch here.
#include <cstdint>
#include <vector>

namespace cedar {

// One parameter in its bucket's buffer (in the buffer's order): its element count and its position
// in model order (0: the first layer's first parameter).
struct BucketPiece {
  int64_t numel = 0;
  int64_t layer = 0;
};

struct Slice {
  int64_t bucket = 0;
  int64_t offset = 0, numel = 0;  // the stretch [offset, offset + numel) of the bucket's buffer
  // The smallest model-order position among the parameters it holds: 0 goes first.
  int64_t priority = 0;
  // The bucket's parameters it holds (all or part of), as indices into the bucket's pieces.
  std::vector<int64_t> pieces;
};

// The slices of `buckets` (each a list of its pieces in buffer order), in priority order: by
// priority, then bucket, then offset. Every element of every bucket lies in exactly one slice.
// Throws std::invalid_argument when slice_elements < 1.
std::vector<Slice> plan_slices(const std::vector<std::vector<BucketPiece>>& buckets,
                               int64_t slice_elements);

}  // namespace cedar
