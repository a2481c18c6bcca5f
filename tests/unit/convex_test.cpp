// The convex pieces of full-batch training: the linear and logistic models' objectives, LAG's
// increasing-smoothness data set (each shard's largest Hessian eigenvalue computed here, from the
// features, against (1 + 1.3^(m-1))^2 / d), the sign counterexample's targets, the optimum f*
// against plain gradient descent, and the full-batch loader serving whole shards.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "datasets/full_batch.h"
#include "datasets/regression.h"
#include "models/model.h"
#include "runner/train/convex_optimum.h"

namespace cedar {
namespace {

std::shared_ptr<Model> convex_model(const std::string& name, int64_t d, double l2 = 0) {
  ModelSpec spec;
  spec.name = name;
  spec.in_channels = d;
  spec.image_size = 1;
  spec.num_classes = 1;
  spec.l2 = l2;
  return make_model(spec);
}

void set_weight(Model& m, const torch::Tensor& w) {
  torch::NoGradGuard no_grad;
  m.parameters()[0].copy_(w);
}

TEST(Convex, LinearModelIsHalfMeanSquaredError) {
  auto m = convex_model("linear", 3);
  ASSERT_EQ(m->parameters().size(), 1u);
  EXPECT_EQ(m->parameters()[0].numel(), 3);
  set_weight(*m, torch::tensor({1.0f, -2.0f, 0.5f}));
  auto x = torch::tensor({1.0f, 0.0f, 2.0f, 0.0f, 1.0f, 0.0f}).view({2, 3});
  auto y = torch::tensor({1.0f, 1.0f});
  auto out = m->forward(x);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2}));
  // predictions 2 and −2: ((2−1)² + (−2−1)²) / (2·2) = 2.5
  EXPECT_DOUBLE_EQ(m->loss(out, y).item<double>(), 2.5);
  EXPECT_THROW(convex_model("linear", 3, 0.1), std::invalid_argument);
}

TEST(Convex, LogisticModelAddsItsRegulariser) {
  auto m = convex_model("logistic", 2, 0.5);
  set_weight(*m, torch::tensor({1.0f, 2.0f}));
  auto x = torch::tensor({1.0f, 0.0f, 0.0f, -1.0f}).view({2, 2});
  auto y = torch::tensor({1.0f, 1.0f});
  auto out = m->forward(x);  // 1 and −2
  const double expected =
      (std::log1p(std::exp(-1.0)) + std::log1p(std::exp(2.0))) / 2 + 0.25 * (1 + 4);
  EXPECT_NEAR(m->loss(out, y).item<double>(), expected, 1e-12);
  EXPECT_EQ(m->correct(out, y).item<double>(), 1);  // only the first has the label's sign
}

TEST(Convex, ShardSmoothnessGrowsAsConstructed) {
  const int64_t shards = 9, d = 50;
  const RegressionSet set = make_increasing_smoothness(shards, d, 1.3, "linear", 7);
  ASSERT_EQ(set.features.sizes(), (std::vector<int64_t>{shards * d, d}));
  ASSERT_EQ(set.targets.sizes(), (std::vector<int64_t>{shards * d}));
  double previous = 0;
  for (int64_t m = 0; m < shards; ++m) {
    const auto x = set.shard_features(m).to(torch::kDouble);
    // L_m: the largest eigenvalue of the Hessian XᵀX/n of shard m's mean least-squares loss.
    const double l_m = torch::linalg_eigvalsh(torch::mm(x.t(), x) / double(d)).max().item<double>();
    const double expected = std::pow(1 + std::pow(1.3, double(m)), 2) / double(d);
    EXPECT_NEAR(l_m, expected, 1e-4 * expected) << "shard " << m;
    EXPECT_GT(l_m, previous * 1.05) << "shard " << m;
    previous = l_m;
  }
  // Seeded: the same set again, another with another seed.
  EXPECT_TRUE(
      torch::equal(set.features, make_increasing_smoothness(9, 50, 1.3, "linear", 7).features));
  EXPECT_FALSE(
      torch::equal(set.features, make_increasing_smoothness(9, 50, 1.3, "linear", 8).features));
  const RegressionSet logistic = make_increasing_smoothness(3, 8, 1.3, "logistic", 7);
  EXPECT_TRUE(logistic.targets.abs().eq(1).all().item<bool>());
  EXPECT_THROW(make_increasing_smoothness(10, 9, 1.3, "linear", 1), std::invalid_argument);
}

TEST(Convex, SignCounterexampleHasAMajorityAboveTheMean) {
  const RegressionSet set = make_sign_counterexample(3, 4, 5);
  EXPECT_TRUE(torch::equal(set.shard_features(2), torch::eye(4)));
  const auto b0 = set.shard_targets(0), b1 = set.shard_targets(1), b2 = set.shard_targets(2);
  EXPECT_TRUE(torch::equal(b0, b1));
  EXPECT_TRUE(torch::allclose(b0 - b2, torch::full({4}, 11.0f)));
  // θ* is the mean of the targets: b − 8/3; the majority's point b + 1 is 11/3 away per
  // coordinate: f(b + 1) − f* = (1/2d)·d·(11/3)².
  const ConvexOptimum opt = convex_optimum(set, 0);
  const double gap = convex_objective(set, b0.to(torch::kDouble), 0) - opt.value;
  EXPECT_NEAR(gap, 0.5 * (11.0 / 3) * (11.0 / 3), 1e-5);
}

// Gradient descent with step 1/L from 0 until the gradient norm is 1e-10.
double descend(const RegressionSet& set, double l2, double step) {
  auto theta = torch::zeros({set.dim()}, torch::kDouble);
  for (int k = 0; k < 200000; ++k) {
    const auto g = convex_gradient(set, theta, l2);
    if (g.norm().item<double>() <= 1e-10) break;
    theta = theta - step * g;
  }
  return convex_objective(set, theta, l2);
}

TEST(Convex, OptimumAgreesWithGradientDescent) {
  const RegressionSet linear = make_increasing_smoothness(2, 3, 1.3, "linear", 3);
  const ConvexOptimum lo = convex_optimum(linear, 0);
  EXPECT_LT(lo.grad_norm, 1e-10);
  EXPECT_NEAR(descend(linear, 0, 0.5), lo.value, 1e-12);
  const RegressionSet logistic = make_increasing_smoothness(2, 3, 1.3, "logistic", 3);
  const ConvexOptimum go = convex_optimum(logistic, 0.1);
  EXPECT_LE(go.grad_norm, 1e-10);
  EXPECT_NEAR(descend(logistic, 0.1, 1.0), go.value, 1e-12);
  // And the model's own objective at θ* is f*.
  auto m = convex_model("logistic", 3, 0.1);
  set_weight(*m, go.theta.to(torch::kFloat));
  const double at_float = m->loss(m->forward(logistic.features), logistic.targets).item<double>();
  EXPECT_NEAR(at_float, go.value, 1e-6);
}

TEST(Convex, FullBatchLoaderServesTheWholeShardOncePerEpoch) {
  auto set =
      std::make_shared<const RegressionSet>(make_increasing_smoothness(3, 5, 1.3, "linear", 1));
  FullBatchLoader loader(set, 1, 3);
  EXPECT_EQ(loader.batches_per_epoch(), 1);
  Batch b;
  ASSERT_TRUE(loader.next(b));
  EXPECT_TRUE(torch::equal(b.images, set->features.narrow(0, 5, 5)));
  EXPECT_TRUE(torch::equal(b.labels, set->targets.narrow(0, 5, 5)));
  EXPECT_FALSE(loader.next(b));
  EXPECT_EQ(loader.position().cursor, 5);
  loader.start_epoch(1);
  EXPECT_TRUE(loader.next(b));
  loader.restore({4, 0, ""});
  EXPECT_TRUE(loader.next(b));
  EXPECT_THROW(FullBatchLoader(set, 0, 4), std::invalid_argument);
}

}  // namespace
}  // namespace cedar
