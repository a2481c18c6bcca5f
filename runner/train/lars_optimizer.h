#pragma once
// LARS: You, Gitman, Ginsburg, "Large Batch Training of Convolutional Networks" (Layer-wise
// Adaptive Rate Scaling), 2017. Per layer l, with global rate γ (the schedule's lr), trust
// coefficient η, weight decay β and momentum m:
//   λ_l = η · ‖w_l‖ / (‖∇w_l‖ + β·‖w_l‖ + eps)      (λ_l = 1 when ‖w_l‖ or ‖∇w_l‖ is 0)
//   v_l ← m·v_l + γ·λ_l·(∇w_l + β·w_l);   w_l ← w_l − v_l
// Batch-norm and bias parameters (every 1-D parameter) are excluded from the adaptation and from
// weight decay when exclude_bn_bias is set: v ← m·v + γ·∇w; w ← w − v.
// Hyper-parameters (optimizer section): trust_coefficient (η, 0.001), lars_eps (0: the paper's
// formula), exclude_bn_bias (true), weight_decay (β), momentum (m); Nesterov is not part of LARS.
#include <ATen/core/Tensor.h>

#include <vector>

#include "runner/train/optimizer.h"

namespace cedar {

// λ for weight w and gradient g as a 0-dim tensor on their device (no host synchronisation).
at::Tensor lars_local_lr(const at::Tensor& w, const at::Tensor& g, double trust_coefficient,
                         double weight_decay, double eps);

class LarsOptimizer final : public Optimizer {
 public:
  // plan.optimizer_momentum=false turns momentum off (for algorithms that apply it themselves).
  // The weight-decay term stays inside the layer-wise rate (no separate weight-decay momentum).
  LarsOptimizer(const std::vector<NamedTensor>& params, std::vector<at::Tensor> grads,
                const OptimizerConfig& cfg, const MomentumPlan& plan);
  void step(double lr) override;
  std::vector<at::Tensor>& momentum_buffers() override { return buffers_; }
  std::vector<at::Tensor>& weight_decay_buffers() override { return no_wd_buffers_; }
  // Whether parameter i gets the layer-wise rate and weight decay (false: a BN / bias parameter).
  bool adapted(size_t i) const { return adapted_[i]; }

 private:
  std::vector<at::Tensor> params_, grads_;
  std::vector<at::Tensor> buffers_, no_wd_buffers_;
  std::vector<bool> adapted_;
  double momentum_, weight_decay_, trust_, eps_;
};

}  // namespace cedar
