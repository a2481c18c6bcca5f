// LARS (You, Gitman, Ginsburg 2017): the layer-wise rate on a hand-picked layer, BN / bias
// exclusion, an oracle against a plain-LibTorch reference, the poly schedule, and the factory.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "config/experiment_config.h"
#include "runner/train/lars_optimizer.h"
#include "runner/train/lr_schedule.h"

namespace cedar {
namespace {

TEST(Lars, LocalRateEqualsTheFormulaForAHandPickedLayer) {
  // ||w|| = 5, ||g|| = 1, eta = 0.001, beta = 0.1: lambda = 0.001 * 5 / (1 + 0.1 * 5) = 1/300.
  auto w = torch::tensor({3.0f, 4.0f});
  auto g = torch::tensor({0.6f, 0.8f});
  EXPECT_NEAR(lars_local_lr(w, g, 0.001, 0.1, 0).item<double>(), 1.0 / 300, 1e-9);
  EXPECT_NEAR(lars_local_lr(w, g, 0.001, 0.1, 0.5).item<double>(), 0.005 / 2.0, 1e-9);
  // Zero norms: lambda = 1.
  EXPECT_EQ(lars_local_lr(torch::zeros({2}), g, 0.001, 0.1, 0).item<double>(), 1.0);
  EXPECT_EQ(lars_local_lr(w, torch::zeros({2}), 0.001, 0.1, 0).item<double>(), 1.0);
}

TEST(Lars, FirstStepAppliesLambdaAndExcludesBnAndBias) {
  OptimizerConfig cfg;
  cfg.momentum = 0.9;
  cfg.weight_decay = 0.1;
  cfg.trust_coefficient = 0.001;
  auto w = torch::tensor({{3.0f, 0.0f}, {0.0f, 4.0f}});   // ||w|| = 5
  auto gw = torch::tensor({{0.6f, 0.0f}, {0.0f, 0.8f}});  // ||g|| = 1
  auto bias = torch::tensor({1.0f, -2.0f});
  auto gb = torch::tensor({0.5f, 0.25f});
  auto w0 = w.clone(), b0 = bias.clone();
  LarsOptimizer opt({{"fc.weight", w}, {"fc.bias", bias}}, {gw, gb}, cfg, MomentumPlan{});
  EXPECT_TRUE(opt.adapted(0));
  EXPECT_FALSE(opt.adapted(1));
  opt.step(2.0);
  // w -= lr * lambda * (g + beta * w), lambda = 1/300.
  EXPECT_TRUE(torch::allclose(w, w0 - 2.0 / 300 * (gw + 0.1 * w0), 1e-6, 1e-7));
  // bias: plain momentum SGD, no lambda, no weight decay.
  EXPECT_TRUE(torch::allclose(bias, b0 - 2.0 * gb, 0, 1e-7));

  // exclude_bn_bias: false adapts the bias as well.
  cfg.exclude_bn_bias = false;
  auto bias2 = b0.clone();
  LarsOptimizer all({{"fc.bias", bias2}}, {gb}, cfg, MomentumPlan{});
  EXPECT_TRUE(all.adapted(0));
  all.step(2.0);
  double lambda = 0.001 * std::sqrt(5.0) / (std::sqrt(0.3125) + 0.1 * std::sqrt(5.0));
  EXPECT_TRUE(torch::allclose(bias2, b0 - 2.0 * lambda * (gb + 0.1 * b0), 1e-5, 1e-7));
}

TEST(Lars, MatchesPlainReferenceOverFiveSteps) {
  torch::manual_seed(4);
  std::vector<std::vector<int64_t>> shapes = {{8, 3, 3, 3}, {8}, {8}, {10, 8}, {10}};
  std::vector<NamedTensor> params;
  std::vector<at::Tensor> grads, ref_w, ref_v(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    params.push_back({"p" + std::to_string(i), torch::randn(shapes[i])});
    grads.push_back(torch::zeros(shapes[i]));
    ref_w.push_back(params.back().tensor.clone());
  }
  OptimizerConfig cfg;
  cfg.momentum = 0.9;
  cfg.weight_decay = 5e-4;
  cfg.trust_coefficient = 0.001;
  LarsOptimizer opt(params, grads, cfg, MomentumPlan{});
  const double m = 0.9, beta = 5e-4, eta = 0.001;
  for (int s = 0; s < 5; ++s) {
    double lr = 3.0 * (1.0 - s / 5.0);
    for (size_t i = 0; i < shapes.size(); ++i) {
      auto g = torch::randn(shapes[i]);
      grads[i].copy_(g);
      // The paper's update, written out with double norms.
      at::Tensor u;
      if (shapes[i].size() > 1) {
        double wn = ref_w[i].norm().item<double>(), gn = g.norm().item<double>();
        double lambda = eta * wn / (gn + beta * wn);
        u = lr * lambda * (g + beta * ref_w[i]);
      } else {
        u = lr * g;
      }
      ref_v[i] = ref_v[i].defined() ? m * ref_v[i] + u : u;
      ref_w[i] = ref_w[i] - ref_v[i];
    }
    opt.step(lr);
    for (size_t i = 0; i < shapes.size(); ++i)
      EXPECT_TRUE(torch::allclose(params[i].tensor, ref_w[i], 1e-5, 1e-6))
          << "step " << s << " p" << i;
  }
}

TEST(Lars, PolySchedule) {
  OptimizerConfig o;
  o.schedule = "poly";
  EXPECT_DOUBLE_EQ(o.poly_power, 2.0);
  EXPECT_DOUBLE_EQ(learning_rate(o, 2.0, 0.0, 10), 2.0);
  EXPECT_NEAR(learning_rate(o, 2.0, 5.0, 10), 2.0 * 0.25, 1e-12);
  EXPECT_NEAR(learning_rate(o, 2.0, 9.0, 10), 2.0 * 0.01, 1e-12);
  EXPECT_NEAR(learning_rate(o, 2.0, 10.0, 10), 0.0, 1e-12);
  o.warmup_epochs = 2;
  o.warmup_start_factor = 0.1;
  EXPECT_NEAR(learning_rate(o, 2.0, 1.0, 10), 2.0 * 0.55, 1e-12);  // linear warm-up
  EXPECT_NEAR(learning_rate(o, 2.0, 2.0, 10), 2.0, 1e-12);         // decay starts after it
  EXPECT_NEAR(learning_rate(o, 2.0, 6.0, 10), 2.0 * 0.25, 1e-12);  // t = (6-2)/(10-2)
  o.poly_power = 1;
  EXPECT_NEAR(learning_rate(o, 2.0, 6.0, 10), 1.0, 1e-12);
}

TEST(Lars, FactoryAndConfig) {
  auto c = parse_experiment(
      YAML::Load("optimizer: {name: lars, schedule: poly, trust_coefficient: 0.002}"), Source{});
  EXPECT_EQ(c.optimizer.name, "lars");
  EXPECT_DOUBLE_EQ(c.optimizer.trust_coefficient, 0.002);
  EXPECT_TRUE(c.optimizer.exclude_bn_bias);
  std::vector<NamedTensor> params = {{"w", torch::ones({2, 2})}};
  auto opt = make_optimizer(c.optimizer, params, {torch::zeros({2, 2})}, MomentumPlan{});
  EXPECT_NE(dynamic_cast<LarsOptimizer*>(opt.get()), nullptr);
  c.optimizer.nesterov = true;
  EXPECT_THROW(make_optimizer(c.optimizer, params, {torch::zeros({2, 2})}, MomentumPlan{}),
               ConfigError);
}

}  // namespace
}  // namespace cedar
