#pragma once
// Optimizers applied after the gradient exchange. SgdOptimizer follows torch.optim.SGD:
//   d = g + wd*w;  b = m*b + d (b = d on the first step);  d = nesterov ? d + m*b : b;  w -= lr*d
#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "runner/config.h"

namespace cedar {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one step; grads[i] (given at construction) holds params[i]'s update direction.
  virtual void step(double lr) = 0;
  // Momentum buffers in parameter order (undefined until first used).
  virtual std::vector<at::Tensor>& momentum_buffers() = 0;
};

class SgdOptimizer final : public Optimizer {
 public:
  // use_momentum=false turns momentum off (for algorithms that apply it themselves).
  SgdOptimizer(std::vector<at::Tensor> params, std::vector<at::Tensor> grads,
               const OptimizerConfig& cfg, bool use_momentum);
  void step(double lr) override;
  std::vector<at::Tensor>& momentum_buffers() override { return buffers_; }

 private:
  std::vector<at::Tensor> params_, grads_;
  std::vector<at::Tensor> buffers_;
  double momentum_, weight_decay_;
  bool nesterov_;
};

// Builds the optimizer named in cfg.name for `params` (model order) and their reduced `grads`.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          const std::vector<NamedTensor>& params,
                                          std::vector<at::Tensor> grads, bool use_momentum);

}  // namespace cedar
