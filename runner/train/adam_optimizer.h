#pragma once
// Adam (Kingma & Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015) and AdamW
// (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019), as torch.optim.Adam
// and torch.optim.AdamW state them. With learning rate γ (the schedule's lr), decays β1, β2,
// ε and weight decay λ, at step t (counted from 1):
//   adam:   g ← g + λ·w                          (L2: the decay enters the moments)
//   adamw:  w ← w·(1 − γ·λ)                      (decoupled: applied to the weights)
//   m ← β1·m + (1 − β1)·g;   v ← β2·v + (1 − β2)·g²
//   w ← w − (γ / (1 − β1^t)) · m / (√v / √(1 − β2^t) + ε)
// m is momentum_buffers() (local SGD's average_momentum averages it), v is more_buffers()'s
// "exp_avg_sq", and t is steps(); a checkpoint keeps all three.
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "runner/train/optimizer.h"

namespace cedar {

class AdamOptimizer final : public Optimizer {
 public:
  // decoupled: AdamW's weight decay, else Adam's.
  AdamOptimizer(std::vector<at::Tensor> params, std::vector<at::Tensor> grads,
                const OptimizerConfig& cfg, bool decoupled);
  void step(double lr) override;
  std::vector<at::Tensor>& momentum_buffers() override { return exp_avg_; }
  std::vector<at::Tensor>& weight_decay_buffers() override { return none_; }
  std::vector<std::pair<std::string, std::vector<at::Tensor>*>> more_buffers() override {
    return {{"exp_avg_sq", &exp_avg_sq_}};
  }
  int64_t steps() const override { return steps_; }
  void set_steps(int64_t steps) override { steps_ = steps; }

 private:
  std::vector<at::Tensor> params_, grads_;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_, none_;
  double beta1_, beta2_, eps_, weight_decay_;
  bool decoupled_;
  int64_t steps_ = 0;
};

}  // namespace cedar
