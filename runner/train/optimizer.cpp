#include "runner/train/optimizer.h"

#include <ATen/ATen.h>

namespace cedar {

SgdOptimizer::SgdOptimizer(std::vector<at::Tensor> params, std::vector<at::Tensor> grads,
                           const OptimizerConfig& cfg, const MomentumPlan& plan)
    : params_(std::move(params)),
      grads_(std::move(grads)),
      buffers_(params_.size()),
      momentum_(plan.optimizer_momentum ? cfg.momentum : 0.0),
      weight_decay_(cfg.weight_decay),
      wd_momentum_(plan.optimizer_momentum ? 0.0 : plan.weight_decay_momentum),
      nesterov_(cfg.nesterov && plan.optimizer_momentum) {
  if (wd_momentum_ != 0 && weight_decay_ != 0) wd_buffers_.resize(params_.size());
}

void SgdOptimizer::step(double lr) {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& w = params_[i];
    const at::Tensor& g = grads_[i];
    at::Tensor d;
    if (!wd_buffers_.empty()) {  // kept only with weight decay and its own momentum
      at::Tensor& c = wd_buffers_[i];
      if (!c.defined()) {
        c = w.mul(weight_decay_);
      } else {
        c.mul_(wd_momentum_).add_(w, weight_decay_);
      }
      d = g.add(c);
    } else {
      d = weight_decay_ != 0 ? g.add(w, weight_decay_) : g;
    }
    if (momentum_ != 0) {
      at::Tensor& b = buffers_[i];
      if (!b.defined()) {
        b = d.clone();
      } else {
        b.mul_(momentum_).add_(d);
      }
      d = nesterov_ ? d.add(b, momentum_) : b;
    }
    w.add_(d, -lr);
  }
}

}  // namespace cedar
