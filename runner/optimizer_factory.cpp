// The optimizers `optimizer.name` selects.
#include "runner/optimizer.h"

namespace cedar {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          const std::vector<NamedTensor>& params,
                                          std::vector<at::Tensor> grads, bool use_momentum) {
  std::vector<at::Tensor> tensors;
  for (const auto& p : params) tensors.push_back(p.tensor);
  if (cfg.name == "sgd") return std::make_unique<SgdOptimizer>(tensors, std::move(grads), cfg, use_momentum);
  throw ConfigError("optimizer.name: unknown optimizer '" + cfg.name + "'");
}

}  // namespace cedar
