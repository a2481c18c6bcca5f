// Cedar's SGD against torch::optim::SGD (the PyTorch rule), and gradient bucketing.
#include "runner/train/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include "algorithms/algorithm.h"
#include "runner/train/buckets.h"

namespace cedar {
namespace {

TEST(Sgd, MatchesTorchOptimSgdStepByStep) {
  for (bool nesterov : {false, true}) {
    torch::manual_seed(3);
    auto w_ref = torch::randn({4, 3}).requires_grad_(true);
    auto w = w_ref.detach().clone();
    OptimizerConfig cfg;
    cfg.momentum = 0.9;
    cfg.weight_decay = 1e-2;
    cfg.nesterov = nesterov;
    auto g = torch::zeros_like(w);
    SgdOptimizer mine({w}, {g}, cfg, MomentumPlan{});
    torch::optim::SGD ref(
        {w_ref}, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-2).nesterov(nesterov));
    for (int s = 0; s < 5; ++s) {
      auto grad = torch::randn({4, 3});
      w_ref.mutable_grad() = grad.clone();
      ref.step();
      g.copy_(grad);
      mine.step(0.1);
      EXPECT_TRUE(torch::allclose(w, w_ref.detach(), 1e-6, 1e-7)) << "step " << s;
    }
  }
}

TEST(Sgd, WithoutMomentumIsPlainGradientStep) {
  auto w = torch::ones({3});
  auto g = torch::full({3}, 2.0f);
  OptimizerConfig cfg;
  cfg.weight_decay = 0;
  SgdOptimizer opt({w}, {g}, cfg, MomentumPlan{false, 0});
  opt.step(0.5);
  opt.step(0.5);
  EXPECT_TRUE(torch::allclose(w, torch::full({3}, -1.0f)));
}

// An algorithm that applies momentum to the gradient itself (u = m*u + g, DGC's correction at
// full density) plus the optimizer's weight-decay momentum is torch's SGD with momentum m and
// weight decay: the weight-decay term is not left without momentum.
TEST(Sgd, WeightDecayMomentumBesideAnAlgorithmsMomentumIsTorchSgd) {
  torch::manual_seed(5);
  auto w_ref = torch::randn({6}).requires_grad_(true);
  auto w = w_ref.detach().clone();
  OptimizerConfig cfg;
  cfg.momentum = 0.0;  // not used: the algorithm applies momentum
  cfg.weight_decay = 0.05;
  auto update = torch::zeros_like(w);
  SgdOptimizer mine({w}, {update}, cfg, MomentumPlan{false, 0.9});
  ASSERT_EQ(mine.weight_decay_buffers().size(), 1u);
  torch::optim::SGD ref({w_ref}, torch::optim::SGDOptions(0.2).momentum(0.9).weight_decay(0.05));
  auto u = torch::zeros_like(w);
  for (int s = 0; s < 6; ++s) {
    auto grad = torch::randn({6});
    w_ref.mutable_grad() = grad.clone();
    ref.step();
    u.mul_(0.9).add_(grad);
    update.copy_(u);
    mine.step(0.2);
    EXPECT_TRUE(torch::allclose(w, w_ref.detach(), 1e-6, 1e-7)) << "step " << s;
  }
  // Without the weight-decay momentum the two part ways (the defect this rule fixes).
  auto w_plain = w_ref.detach().clone().fill_(1.0f);
  auto w_mom = w_plain.clone();
  auto g0 = torch::zeros_like(w_plain), g1 = torch::zeros_like(w_plain);
  SgdOptimizer plain({w_plain}, {g0}, cfg, MomentumPlan{false, 0});
  SgdOptimizer with({w_mom}, {g1}, cfg, MomentumPlan{false, 0.9});
  for (int s = 0; s < 3; ++s) {
    plain.step(0.2);
    with.step(0.2);
  }
  EXPECT_GT((w_plain - w_mom).abs().max().item<double>(), 1e-3);
}

// What momentum the updates really get, and the one-line warning when optimizer.momentum is not it.
TEST(Sgd, EffectiveMomentumAndTheWarningWhenTheConfiguredOneIsNotUsed) {
  auto make = [](const std::string& name, const std::string& yaml) {
    return find_algorithm(name).make(YAML::Load(yaml), Source{}, nullptr);
  };
  OptimizerConfig cfg;
  cfg.momentum = 0.9;
  struct Case {
    std::string name, yaml;
    double effective;
    std::string warning;  // a part of it; empty: no warning
  };
  const std::vector<Case> cases = {
      {"dense", "{}", 0.9, ""},
      {"powersgd", "{}", 0.9, ""},
      {"dgc", "{}", 0.9, ""},
      {"dgc", "{momentum: 0.5}", 0.5,
       "optimizer.momentum 0.9 is overridden: dgc applies its own momentum 0.5"},
      {"signsgd", "{momentum: 0.8}", 0.8, "overridden: signsgd applies its own momentum 0.8"},
      {"signsgd", "{momentum: 0}", 0.0, "ignored: signsgd takes steps without momentum"},
      {"lag", "{}", 0.0, "optimizer.momentum 0.9 is ignored: lag takes steps without momentum"},
      {"ef-signsgd", "{}", 0.0, "ignored: ef-signsgd"},
  };
  for (const auto& c : cases) {
    auto a = make(c.name, c.yaml);
    EXPECT_EQ(effective_momentum(cfg, *a), c.effective) << c.name << " " << c.yaml;
    const std::string w = momentum_warning(cfg, *a, c.name);
    if (c.warning.empty()) {
      EXPECT_EQ(w, "") << c.name;
    } else
      EXPECT_NE(w.find(c.warning), std::string::npos) << c.name << ": " << w;
  }
  cfg.momentum = 0;  // LAG's own baseline: nothing to warn about
  EXPECT_EQ(momentum_warning(cfg, *make("lag", "{}"), "lag"), "");
}

TEST(Buckets, ReverseOrderSizeLimitAndViews) {
  std::vector<NamedTensor> params = {
      {"a", torch::zeros({10})}, {"b", torch::zeros({20})}, {"c", torch::zeros({30})}};
  EXPECT_EQ(make_buckets(params, 100 * 4).size(), 1u);  // 60 floats fit in one bucket
  auto small = make_buckets(params, 40 * 4);
  ASSERT_EQ(small.size(), 2u);  // [c] (30), [b, a] (30)
  EXPECT_EQ(small[0].entries[0].name, "c");
  EXPECT_EQ(small[1].entries[0].name, "b");
  EXPECT_EQ(small[1].entries[1].name, "a");
  for (auto& p : params)
    p.tensor.mutable_grad() = torch::full_like(p.tensor, float(p.tensor.numel()));
  gather_gradients(small);
  EXPECT_FLOAT_EQ(small[1].flat[0].item<float>(), 20.0f);
  EXPECT_FLOAT_EQ(small[1].flat[25].item<float>(), 10.0f);
  small[1].entries[1].grad.fill_(7);  // writes through to the flat buffer
  EXPECT_FLOAT_EQ(small[1].flat[29].item<float>(), 7.0f);
}

}  // namespace
}  // namespace cedar
