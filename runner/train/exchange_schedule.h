#pragma once
// train.schedule: the order of the exchanges that overlap backward (train.overlap).
//
//   fifo      whole buckets in index order, the order backward fills them (backward_overlap.h).
//   priority  slices of train.slice_kb kB of each bucket (slice_plan.h), the first layers' first,
//             in the order the ranks agree on before each slice (priority_schedule.h).
//
// What slicing changes for an algorithm: one that treats every gradient element on its own
// (AlgorithmInfo::elementwise_exchange: dense, fp16, local SGD) computes on a slice exactly what
// it computes on the same elements inside the whole bucket, so the schedule changes only when each
// element is exchanged. Every other algorithm defines its compression over a whole tensor, bucket
// or model: top-k and random-k choose k of each tensor's elements, QSGD scales each block of a
// tensor by the block's norm, TernGrad each tensor by its maximum, PowerSGD factors each
// parameter's matrix (half a matrix is another low-rank problem), random streams and
// error-feedback memories are kept per bucket or tensor, LAG and its relatives decide per step
// over all buckets, signSGD's momenta are kept per tensor. Cut into slices they would run a
// different method, one that depends on where the cuts fall. So the rule is:
// train.schedule: priority runs only the elementwise algorithms and refuses the others, naming
// the algorithm, before the run is recorded.
#include <cstdint>

#include "config/experiment_config.h"

namespace cedar {

// The slice length in gradients (fp32 elements) of train.slice_kb kB: floor(slice_kb * 1000 / 4).
int64_t slice_elements(double slice_kb);

// 0 under train.schedule: fifo, else the slice length of train.slice_kb.
int64_t priority_slice_elements(const TrainConfig& train);

// Throws ConfigError naming the algorithm when train.schedule: priority is set with an algorithm
// whose exchange is not elementwise (the rule above).
void check_schedule_for(const ExperimentConfig& cfg);

}  // namespace cedar
