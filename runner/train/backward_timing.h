#pragma once
// When backward produces each parameter's gradient, for tensor fusion from the network model
// (train.fusion, runner/train/fusion_schedule.h): a hook on every parameter notes the time its
// gradient arrives, as the overlap's hooks see it (runner/train/backward_overlap.h).
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "algorithms/algorithm.h"

namespace cedar {

// Runs `warmup` + `measured` passes of forward_loss() (forward, returning the loss) and its
// backward; returns per parameter, in the order of `params`, the median over the measured passes
// of the seconds from backward's start to its gradient (backward's end for a parameter that got
// none). Every parameter's .grad() is left undefined; anything else forward changes (batch-norm
// statistics, generators) is the caller's to keep.
std::vector<double> gradient_ready_seconds(const std::vector<NamedTensor>& params,
                                           const std::function<at::Tensor()>& forward_loss,
                                           int warmup, int measured);

}  // namespace cedar
