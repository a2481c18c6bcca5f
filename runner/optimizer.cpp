#include "runner/optimizer.h"

#include <ATen/ATen.h>

namespace cedar {

SgdOptimizer::SgdOptimizer(std::vector<at::Tensor> params, std::vector<at::Tensor> grads,
                           const OptimizerConfig& cfg, bool use_momentum)
    : params_(std::move(params)),
      grads_(std::move(grads)),
      buffers_(params_.size()),
      momentum_(use_momentum ? cfg.momentum : 0.0),
      weight_decay_(cfg.weight_decay),
      nesterov_(cfg.nesterov && use_momentum) {}

void SgdOptimizer::step(double lr) {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& w = params_[i];
    const at::Tensor& g = grads_[i];
    at::Tensor d = weight_decay_ != 0 ? g.add(w, weight_decay_) : g;
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
