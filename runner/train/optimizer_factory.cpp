// The optimizers `optimizer.name` selects: sgd, lars, adam, adamw.
#include <string>
#include <utility>

#include "runner/train/adam_optimizer.h"
#include "runner/train/lars_optimizer.h"
#include "runner/train/log.h"
#include "runner/train/optimizer.h"

namespace cedar {

double effective_momentum(const OptimizerConfig& cfg, const Algorithm& a) {
  return a.applies_momentum() ? a.own_momentum() : cfg.momentum;
}

std::string momentum_warning(const OptimizerConfig& cfg, const Algorithm& a,
                             const std::string& algorithm) {
  const double used = effective_momentum(cfg, a);
  if (used == cfg.momentum) return "";
  if (used == 0)
    return strprintf(
        "optimizer.momentum %g is ignored: %s takes steps without momentum "
        "(effective momentum 0)",
        cfg.momentum, algorithm.c_str());
  return strprintf(
      "optimizer.momentum %g is overridden: %s applies its own momentum %g "
      "(set by the algorithm's own keys)",
      cfg.momentum, algorithm.c_str(), used);
}

void check_optimizer_for(const OptimizerConfig& cfg, const Algorithm& algorithm,
                         const std::string& algorithm_name) {
  if (algorithm.needs_plain_sgd() && cfg.name != "sgd")
    throw ConfigError("optimizer.name '" + cfg.name + "' with algorithm " + algorithm_name + ": " +
                      algorithm_name +
                      " writes its whole preconditioned step as the update, which the optimizer "
                      "must apply as plain SGD does (lr times the update, weight_decay as "
                      "decoupled decay); use optimizer.name: sgd with it");
  if (algorithm.needs_plain_sgd()) {
    // Adam's own keys are the algorithm's there (algorithm.beta1, ...): a changed optimizer key
    // would be silently unused.
    const OptimizerConfig defaults;
    const std::pair<const char*, double> adam_keys[] = {{"beta1", cfg.beta1 - defaults.beta1},
                                                        {"beta2", cfg.beta2 - defaults.beta2},
                                                        {"eps", cfg.eps - defaults.eps}};
    for (const auto& [key, change] : adam_keys)
      if (change != 0)
        throw ConfigError(std::string("optimizer.") + key + " with algorithm " + algorithm_name +
                          ": the optimizer does not read it; set algorithm." + key + " instead");
  }
  if ((cfg.name == "adam" || cfg.name == "adamw") && algorithm.applies_momentum())
    throw ConfigError("optimizer.name '" + cfg.name + "' with algorithm " + algorithm_name + ": " +
                      algorithm_name +
                      " applies its own momentum or takes its own steps, so the optimizer never "
                      "sees the averaged gradient " +
                      cfg.name + " needs; use optimizer.name: sgd with it");
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          const std::vector<NamedTensor>& params,
                                          std::vector<at::Tensor> grads, const MomentumPlan& plan) {
  if (cfg.name == "sgd") {
    std::vector<at::Tensor> tensors;
    for (const auto& p : params) tensors.push_back(p.tensor);
    return std::make_unique<SgdOptimizer>(tensors, std::move(grads), cfg, plan);
  }
  if (cfg.name == "lars") {
    if (cfg.nesterov)
      throw ConfigError(
          "optimizer.nesterov: LARS (You et al. 2017) uses plain momentum; "
          "set nesterov: false with optimizer.name: lars");
    return std::make_unique<LarsOptimizer>(params, std::move(grads), cfg, plan);
  }
  if (cfg.name == "adam" || cfg.name == "adamw") {
    if (!plan.optimizer_momentum)
      throw ConfigError("optimizer.name '" + cfg.name +
                        "': the algorithm applies its own momentum; use optimizer.name: sgd");
    std::vector<at::Tensor> tensors;
    for (const auto& p : params) tensors.push_back(p.tensor);
    return std::make_unique<AdamOptimizer>(tensors, std::move(grads), cfg, cfg.name == "adamw");
  }
  throw ConfigError("optimizer.name: unknown optimizer '" + cfg.name + "'");
}

}  // namespace cedar
