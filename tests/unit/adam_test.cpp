// Adam and AdamW (runner/train/adam_optimizer.h) against LibTorch's own torch::optim::Adam and
// torch::optim::AdamW, step by step with weight decay; their state (both moments and the step
// count) carried into a fresh optimizer continues exactly, as a checkpoint's resume does; and the
// algorithms that take their own steps refuse them by name.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "config/params.h"
#include "runner/train/adam_optimizer.h"
#include "runner/train/optimizer.h"

namespace cedar {
namespace {

OptimizerConfig adam_config(const std::string& name) {
  OptimizerConfig cfg;
  cfg.name = name;
  cfg.weight_decay = 1e-2;
  cfg.beta1 = 0.8;
  cfg.beta2 = 0.95;
  cfg.eps = 1e-6;
  return cfg;
}

template <class TorchOptimizer, class Options>
void expect_matches_libtorch(const std::string& name, Options options) {
  torch::manual_seed(11);
  auto w_ref = torch::randn({5, 4}).requires_grad_(true);
  auto w = w_ref.detach().clone();
  auto g = torch::zeros_like(w);
  const OptimizerConfig cfg = adam_config(name);
  auto mine = make_optimizer(cfg, {{"w", w}}, {g}, MomentumPlan{});
  TorchOptimizer ref({w_ref}, options);
  for (int s = 0; s < 8; ++s) {
    auto grad = torch::randn({5, 4});
    w_ref.mutable_grad() = grad.clone();
    ref.step();
    g.copy_(grad);
    mine->step(0.05);
    EXPECT_TRUE(torch::allclose(w, w_ref.detach(), 1e-6, 1e-7))
        << name << " step " << s << ": max difference "
        << (w - w_ref.detach()).abs().max().item<double>();
  }
  EXPECT_EQ(mine->steps(), 8);
}

TEST(Adam, MatchesTorchOptimAdam) {
  expect_matches_libtorch<torch::optim::Adam>(
      "adam", torch::optim::AdamOptions(0.05).betas({0.8, 0.95}).eps(1e-6).weight_decay(1e-2));
}

TEST(Adam, AdamWMatchesTorchOptimAdamW) {
  expect_matches_libtorch<torch::optim::AdamW>(
      "adamw", torch::optim::AdamWOptions(0.05).betas({0.8, 0.95}).eps(1e-6).weight_decay(1e-2));
}

// Adam's and AdamW's weight decay differ (coupled to the moments, or applied to the weights): the
// same gradients give different weights after a few steps.
TEST(Adam, AdamAndAdamWDiffer) {
  auto run = [](const std::string& name) {
    torch::manual_seed(2);
    auto w = torch::randn({16});
    auto g = torch::zeros_like(w);
    auto opt = make_optimizer(adam_config(name), {{"w", w}}, {g}, MomentumPlan{});
    for (int s = 0; s < 4; ++s) {
      g.copy_(torch::randn({16}));
      opt->step(0.1);
    }
    return w;
  };
  EXPECT_FALSE(torch::allclose(run("adam"), run("adamw"), 1e-6, 1e-7));
}

// What a checkpoint keeps (momentum_buffers, more_buffers, steps) continues bitwise in a new
// optimizer: the bias correction needs the step count, the update both moments.
TEST(Adam, ItsStateContinuesInAFreshOptimizer) {
  torch::manual_seed(4);
  auto w = torch::randn({7});
  auto g = torch::zeros_like(w);
  const OptimizerConfig cfg = adam_config("adam");
  AdamOptimizer first({w}, {g}, cfg, false);
  std::vector<at::Tensor> grads;
  for (int s = 0; s < 6; ++s) grads.push_back(torch::randn({7}));
  for (int s = 0; s < 3; ++s) {
    g.copy_(grads[s]);
    first.step(0.02);
  }
  auto w2 = w.clone();
  auto g2 = torch::zeros_like(w2);
  AdamOptimizer resumed({w2}, {g2}, cfg, false);
  resumed.momentum_buffers()[0] = first.momentum_buffers()[0].clone();
  ASSERT_EQ(resumed.more_buffers().size(), 1u);
  *resumed.more_buffers()[0].second =
      std::vector<at::Tensor>{first.more_buffers()[0].second->at(0).clone()};
  resumed.set_steps(first.steps());
  for (int s = 3; s < 6; ++s) {
    g.copy_(grads[s]);
    first.step(0.02);
    g2.copy_(grads[s]);
    resumed.step(0.02);
  }
  EXPECT_TRUE(torch::equal(w, w2));
  // Without the step count the bias correction restarts and the weights part ways.
  auto w3 = w.clone();
  auto g3 = torch::zeros_like(w3);
  AdamOptimizer restarted({w3}, {g3}, cfg, false);
  restarted.momentum_buffers()[0] = first.momentum_buffers()[0].clone();
  g3.copy_(grads[5]);
  auto w_next = w.clone();
  auto g_next = torch::zeros_like(w_next);
  AdamOptimizer counted({w_next}, {g_next}, cfg, false);
  counted.momentum_buffers()[0] = first.momentum_buffers()[0].clone();
  *counted.more_buffers()[0].second = *first.more_buffers()[0].second;
  *restarted.more_buffers()[0].second = *first.more_buffers()[0].second;
  counted.set_steps(first.steps());
  g_next.copy_(grads[5]);
  restarted.step(0.02);
  counted.step(0.02);
  EXPECT_FALSE(torch::equal(w3, w_next));
}

// Every algorithm of the catalog is checked: one that applies its own momentum or takes its own
// steps refuses Adam naming itself, every other one accepts it. The papers fix four of them: DGC
// (momentum correction), Signum and EF-signSGD (their own sign steps) and LAG (its own update
// from stale gradients) take their own steps; dense S-SGD hands the optimizer the average.
TEST(Adam, AlgorithmsThatTakeTheirOwnStepsRefuseIt) {
  auto make = [](const std::string& name) {
    return find_algorithm(name).make(YAML::Load("{}"), Source{}, nullptr);
  };
  const std::vector<std::string> own_steps_by_paper = {"dgc", "signsgd", "ef-signsgd", "lag"};
  for (const std::string opt : {"adam", "adamw"}) {
    OptimizerConfig cfg;
    cfg.name = opt;
    std::vector<std::string> refused;
    for (const std::string& name : gradient_algorithm_names()) {
      const auto algorithm = make(name);
      try {
        check_optimizer_for(cfg, *algorithm, name);
        EXPECT_FALSE(algorithm->applies_momentum()) << name << " accepted " << opt;
      } catch (const ConfigError& e) {
        refused.push_back(name);
        EXPECT_TRUE(algorithm->applies_momentum()) << name << " refused " << opt;
        EXPECT_NE(std::string(e.what()).find("algorithm " + name), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(opt), std::string::npos) << e.what();
      }
    }
    for (const auto& name : own_steps_by_paper)
      EXPECT_NE(std::find(refused.begin(), refused.end(), name), refused.end())
          << name << " accepted " << opt;
    EXPECT_EQ(std::find(refused.begin(), refused.end(), "dense"), refused.end());
  }
  OptimizerConfig sgd;
  EXPECT_NO_THROW(check_optimizer_for(sgd, *make("dgc"), "dgc"));
}

}  // namespace
}  // namespace cedar
