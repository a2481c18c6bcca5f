#pragma once
// Learning rate as a function of (fractional) epoch: large-batch scaling of the base rate, linear
// warm-up, then constant / step / cosine / polynomial decay. No LibTorch here.
#include "config/experiment_config.h"

namespace cedar {

// Base rate after the large-batch scaling rule (linear: world*batch/base_batch; sqrt: its root).
double scaled_base_lr(const OptimizerConfig& o, int world_size, int64_t batch_per_worker);

// epoch: fractional epoch in [0, total_epochs).
double learning_rate(const OptimizerConfig& o, double base_lr, double epoch, double total_epochs);

}  // namespace cedar
