#include "runner/train/lars_optimizer.h"

#include <ATen/ATen.h>

namespace cedar {

at::Tensor lars_local_lr(const at::Tensor& w, const at::Tensor& g, double trust_coefficient,
                         double weight_decay, double eps) {
  at::Tensor w_norm = w.norm();
  at::Tensor g_norm = g.norm();
  at::Tensor ratio = w_norm * trust_coefficient / (g_norm + w_norm * weight_decay + eps);
  return at::where(w_norm.gt(0).logical_and(g_norm.gt(0)), ratio, at::ones_like(ratio));
}

LarsOptimizer::LarsOptimizer(const std::vector<NamedTensor>& params, std::vector<at::Tensor> grads,
                             const OptimizerConfig& cfg, const MomentumPlan& plan)
    : grads_(std::move(grads)),
      buffers_(params.size()),
      momentum_(plan.optimizer_momentum ? cfg.momentum : 0.0),
      weight_decay_(cfg.weight_decay),
      trust_(cfg.trust_coefficient),
      eps_(cfg.lars_eps) {
  for (const auto& p : params) {
    params_.push_back(p.tensor);
    adapted_.push_back(!(cfg.exclude_bn_bias && p.tensor.dim() <= 1));
  }
}

void LarsOptimizer::step(double lr) {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& w = params_[i];
    const at::Tensor& g = grads_[i];
    // u = γ·λ·(g + β·w) for adapted layers, γ·g for excluded ones.
    at::Tensor u;
    if (adapted_[i]) {
      at::Tensor local = lars_local_lr(w, g, trust_, weight_decay_, eps_);
      at::Tensor d = weight_decay_ != 0 ? g.add(w, weight_decay_) : g.clone();
      u = d.mul_(local * lr);
    } else {
      u = g.mul(lr);
    }
    if (momentum_ != 0) {
      at::Tensor& v = buffers_[i];
      if (!v.defined()) {
        v = u;
      } else {
        v.mul_(momentum_).add_(u);
      }
      w.sub_(v);
    } else {
      w.sub_(u);
    }
  }
}

}  // namespace cedar
