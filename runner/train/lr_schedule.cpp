#include "runner/train/lr_schedule.h"

#include <cmath>

namespace cedar {

double scaled_base_lr(const OptimizerConfig& o, int world_size, int64_t batch_per_worker) {
  double ratio = double(world_size) * double(batch_per_worker) / double(o.base_batch);
  if (o.lr_scaling == "linear") return o.lr * ratio;
  if (o.lr_scaling == "sqrt") return o.lr * std::sqrt(ratio);
  return o.lr;
}

double learning_rate(const OptimizerConfig& o, double base_lr, double epoch, double total_epochs) {
  if (o.warmup_epochs > 0 && epoch < o.warmup_epochs) {
    double t = epoch / o.warmup_epochs;
    return base_lr * (o.warmup_start_factor + (1.0 - o.warmup_start_factor) * t);
  }
  if (o.schedule == "step") {
    double lr = base_lr;
    for (double m : o.milestones)
      if (epoch >= m) lr *= o.gamma;
    return lr;
  }
  if (o.schedule == "cosine") {
    double span = total_epochs - o.warmup_epochs;
    double t = span > 0 ? (epoch - o.warmup_epochs) / span : 1.0;
    return base_lr * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, std::max(0.0, t))));
  }
  if (o.schedule == "poly") {
    // Polynomial decay (You, Gitman, Ginsburg 2017): base * (1 - t)^power over the epochs after
    // warm-up, t = (epoch - warmup) / (total - warmup).
    double span = total_epochs - o.warmup_epochs;
    double t = span > 0 ? (epoch - o.warmup_epochs) / span : 1.0;
    return base_lr * std::pow(1.0 - std::min(1.0, std::max(0.0, t)), o.poly_power);
  }
  return base_lr;
}

}  // namespace cedar
