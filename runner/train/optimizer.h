#pragma once
// Optimizers applied after the gradient exchange. SgdOptimizer follows torch.optim.SGD:
//   d = g + wd*w;  b = m*b + d (b = d on the first step);  d = nesterov ? d + m*b : b;  w -= lr*d
// For an algorithm that applies momentum to the gradient itself (DGC), the optimizer runs without
// momentum and may give the weight-decay term a momentum m_wd of its own:
//   c = m_wd*c + wd*w (c = wd*w on the first step);  w -= lr*(g + c)
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "config/experiment_config.h"

namespace cedar {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one step; grads[i] (given at construction) holds params[i]'s update direction.
  virtual void step(double lr) = 0;
  // Momentum buffers in parameter order (undefined until first used).
  virtual std::vector<at::Tensor>& momentum_buffers() = 0;
  // Momentum buffers of the weight-decay term in parameter order (empty when the optimizer keeps
  // none); checkpointed with the momentum buffers.
  virtual std::vector<at::Tensor>& weight_decay_buffers() = 0;
  // Further per-parameter state a checkpoint keeps, by name (Adam's second moments).
  virtual std::vector<std::pair<std::string, std::vector<at::Tensor>*>> more_buffers() {
    return {};
  }
  // Steps taken (Adam's bias correction counts them; 0 for the others), and set on resume.
  virtual int64_t steps() const { return 0; }
  virtual void set_steps(int64_t) {}
};

// How the optimizer treats momentum, from the algorithm (Algorithm::applies_momentum()).
struct MomentumPlan {
  bool optimizer_momentum = true;    // false: the algorithm applies momentum itself
  double weight_decay_momentum = 0;  // momentum of the weight-decay term when the algorithm does
};
inline MomentumPlan momentum_plan(const Algorithm& a) {
  return {!a.applies_momentum(), a.applies_momentum() ? a.weight_decay_momentum() : 0.0};
}
// The momentum the updates get: optimizer.momentum, or the algorithm's own when it applies
// momentum itself (0 for plain steps).
double effective_momentum(const OptimizerConfig& cfg, const Algorithm& a);
// One line saying that optimizer.momentum is ignored or overridden by `algorithm`, naming what is
// used instead; empty when the configured value is the one the updates get.
std::string momentum_warning(const OptimizerConfig& cfg, const Algorithm& a,
                             const std::string& algorithm);

class SgdOptimizer final : public Optimizer {
 public:
  SgdOptimizer(std::vector<at::Tensor> params, std::vector<at::Tensor> grads,
               const OptimizerConfig& cfg, const MomentumPlan& plan);
  void step(double lr) override;
  std::vector<at::Tensor>& momentum_buffers() override { return buffers_; }
  std::vector<at::Tensor>& weight_decay_buffers() override { return wd_buffers_; }

 private:
  std::vector<at::Tensor> params_, grads_;
  std::vector<at::Tensor> buffers_, wd_buffers_;
  double momentum_, weight_decay_, wd_momentum_;
  bool nesterov_;
};

// Throws ConfigError naming the algorithm when it cannot step with the optimizer of `cfg`: Adam and
// AdamW need the averaged gradient itself, which an algorithm that applies momentum or takes its
// own steps (DGC, signSGD's Signum, EF-signSGD, LAG: applies_momentum()) does not hand over; an
// algorithm whose update is a whole preconditioned step (1-bit Adam: needs_plain_sgd()) runs with
// optimizer.name: sgd only.
void check_optimizer_for(const OptimizerConfig& cfg, const Algorithm& algorithm,
                         const std::string& algorithm_name);

// Builds the optimizer named in cfg.name for `params` (model order) and their reduced `grads`.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          const std::vector<NamedTensor>& params,
                                          std::vector<at::Tensor> grads, const MomentumPlan& plan);

}  // namespace cedar
