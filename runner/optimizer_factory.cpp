// The optimizers `optimizer.name` selects.
#include "runner/lars_optimizer.h"
#include "runner/optimizer.h"

namespace cedar {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          const std::vector<NamedTensor>& params,
                                          std::vector<at::Tensor> grads, bool use_momentum) {
  if (cfg.name == "sgd") {
    std::vector<at::Tensor> tensors;
    for (const auto& p : params) tensors.push_back(p.tensor);
    return std::make_unique<SgdOptimizer>(tensors, std::move(grads), cfg, use_momentum);
  }
  if (cfg.name == "lars") {
    if (cfg.nesterov)
      throw ConfigError("optimizer.nesterov: LARS (You et al. 2017) uses plain momentum; "
                        "set nesterov: false with optimizer.name: lars");
    return std::make_unique<LarsOptimizer>(params, std::move(grads), cfg, use_momentum);
  }
  throw ConfigError("optimizer.name: unknown optimizer '" + cfg.name + "'");
}

}  // namespace cedar
