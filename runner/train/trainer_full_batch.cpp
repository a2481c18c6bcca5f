// Full-batch training (train.full_batch) of the Trainer: rank r's step is its whole shard r of a
// regression set, so every worker computes the full gradient of its local objective, the setting
// of LAG (Chen, Giannakis, Sun, Yin, NeurIPS 2018, Sec. 5) and of the sign counterexample
// (datasets/regression.cpp). One step is one epoch.
//
// The optimality gap. The step's training loss, agreed over the ranks, is Σ_m n_m f_m(θ_k) / N =
// f(θ_k) at the parameters the step starts from (every algorithm allowed here keeps the ranks'
// parameters equal; the evaluation reports their distance if not). Each step records
//   gap          f(θ_k) − f*  (f* from runner/train/convex_optimum.h, float64)
// and, with train.target_gap = ε > 0, the first step with gap ≤ ε records gap_reached = 1 and
// training stops after it. The communication rounds spent to reach θ_k are the uploads of the
// steps before it (LAG's step stat "uploads"; every worker every step for dense gradient
// descent).
#include <torch/torch.h>

#include "comm/communicator.h"
#include "datasets/full_batch.h"
#include "runner/train/convex_optimum.h"
#include "runner/train/evaluator.h"
#include "runner/train/log.h"
#include "runner/train/lr_schedule.h"
#include "runner/train/trainer.h"

namespace cedar {

void Trainer::build_full_batch() {
  try {
    loader_ = std::make_unique<FullBatchLoader>(data_.regression, comm_.rank(), comm_.size());
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
  steps_per_epoch_ = 1;
  base_lr_ = scaled_base_lr(cfg_.optimizer, comm_.size(), cfg_.train.batch_size);
  const ConvexOptimum opt = convex_optimum(*data_.regression, cfg_.model.l2);
  optimum_ = opt.value;
  if (!quiet_ && comm_.rank() == 0)
    log_info(strprintf("full batch: %lld shards of %lld samples, f* = %.12g (gradient norm %.2g)",
                       static_cast<long long>(data_.regression->shards),
                       static_cast<long long>(data_.regression->per_shard()), opt.value,
                       opt.grad_norm));
}

void Trainer::record_gap(StepContext& ctx, const StepAgreement& agreed) {
  const double gap = agreed.loss_sum / agreed.count - optimum_;
  ctx.stats["gap"] = gap;
  if (cfg_.train.target_gap > 0 && !reached_gap_ && gap <= cfg_.train.target_gap) {
    reached_gap_ = true;
    reached_target_ = true;
    ctx.stats["gap_reached"] = 1;
  }
}

bool Trainer::evaluate_after_epoch(int64_t epoch) const {
  if (!cfg_.train.full_batch) return true;
  const int64_t every = cfg_.train.eval_every_steps;
  return (every > 0 && step_ % every == 0) || epoch + 1 == cfg_.train.epochs ||
         step_limit_reached() || reached_target_;
}

EvalResult Trainer::evaluate_full_batch() {
  torch::NoGradGuard no_grad;
  const RegressionSet& set = *data_.regression;
  return evaluate_averaged(*model_, control_, [&] {
    const auto x = set.shard_features(control_.rank()).to(device_);
    const auto y = set.shard_targets(control_.rank()).to(device_);
    const auto out = model_->forward(x);
    const double n = static_cast<double>(y.size(0));
    auto totals = torch::tensor(
        {model_->loss(out, y).item<double>() * n, model_->correct(out, y).item<double>(), n},
        torch::kDouble);
    control_.allreduce_sum(totals);
    EvalResult r;
    r.count = static_cast<int64_t>(totals[2].item<double>());
    r.loss = totals[0].item<double>() / std::max<int64_t>(1, r.count);
    r.accuracy = totals[1].item<double>() / std::max<int64_t>(1, r.count);
    return r;
  });
}

}  // namespace cedar
