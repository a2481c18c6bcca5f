#include "runner/train/adam_optimizer.h"

#include <ATen/ATen.h>

#include <cmath>

namespace cedar {

AdamOptimizer::AdamOptimizer(std::vector<at::Tensor> params, std::vector<at::Tensor> grads,
                             const OptimizerConfig& cfg, bool decoupled)
    : params_(std::move(params)),
      grads_(std::move(grads)),
      exp_avg_(params_.size()),
      exp_avg_sq_(params_.size()),
      beta1_(cfg.beta1),
      beta2_(cfg.beta2),
      eps_(cfg.eps),
      weight_decay_(cfg.weight_decay),
      decoupled_(decoupled) {}

void AdamOptimizer::step(double lr) {
  at::NoGradGuard no_grad;
  ++steps_;
  const double t = static_cast<double>(steps_);
  const double step_size = lr / (1 - std::pow(beta1_, t));
  const double correction2_sqrt = std::sqrt(1 - std::pow(beta2_, t));
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& w = params_[i];
    if (decoupled_ && weight_decay_ != 0) w.mul_(1 - lr * weight_decay_);
    const at::Tensor g =
        !decoupled_ && weight_decay_ != 0 ? grads_[i].add(w, weight_decay_) : grads_[i];
    at::Tensor& m = exp_avg_[i];
    at::Tensor& v = exp_avg_sq_[i];
    if (!m.defined()) m = at::zeros_like(w);
    if (!v.defined()) v = at::zeros_like(w);
    m.mul_(beta1_).add_(g, 1 - beta1_);
    v.mul_(beta2_).addcmul_(g, g, 1 - beta2_);
    const at::Tensor denom = v.sqrt().div_(correction2_sqrt).add_(eps_);
    w.addcdiv_(m, denom, -step_size);
  }
}

}  // namespace cedar
