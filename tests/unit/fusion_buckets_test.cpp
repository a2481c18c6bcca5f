// Buckets from a fusion grouping (runner/train/buckets.h) and the gradient times they are planned
// from (runner/train/backward_timing.h).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "runner/train/backward_timing.h"
#include "runner/train/buckets.h"

namespace cedar {
namespace {

std::vector<NamedTensor> four_params() {
  return {{"a", torch::zeros({10})},
          {"b", torch::zeros({2, 10})},
          {"c", torch::zeros({30})},
          {"d", torch::zeros({4})}};
}

TEST(FusionBuckets, GroupsTakeTheParametersInReverseOrderEachOnce) {
  const auto params = four_params();
  const auto buckets = buckets_of_groups(params, {1, 2, 1});
  ASSERT_EQ(buckets.size(), 3u);
  std::vector<std::vector<std::string>> names;
  std::multiset<std::string> seen;
  for (size_t b = 0; b < buckets.size(); ++b) {
    EXPECT_EQ(buckets[b].index, static_cast<int64_t>(b));
    names.emplace_back();
    int64_t numel = 0;
    for (const auto& e : buckets[b].entries) {
      names.back().push_back(e.name);
      seen.insert(e.name);
      numel += e.grad.numel();
      EXPECT_EQ(e.grad.sizes(), e.param.sizes());
    }
    EXPECT_EQ(buckets[b].flat.numel(), numel);
  }
  EXPECT_EQ(names, (std::vector<std::vector<std::string>>{{"d"}, {"c", "b"}, {"a"}}));
  EXPECT_EQ(seen, (std::multiset<std::string>{"a", "b", "c", "d"}));
  // The views are the flat buffer's: b follows c's 30 values.
  buckets[1].entries[1].grad.fill_(3);
  EXPECT_FLOAT_EQ(buckets[1].flat[30].item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(buckets[1].flat[29].item<float>(), 0.0f);
  EXPECT_THROW(buckets_of_groups(params, {1, 2}), std::invalid_argument);
  EXPECT_THROW(buckets_of_groups(params, {2, 3}), std::invalid_argument);
  EXPECT_THROW(buckets_of_groups(params, {4, 0}), std::invalid_argument);
}

TEST(FusionBuckets, LayersAreTheParametersInBackwardOrderWithTheirGaps) {
  const auto params = four_params();
  // In model order a..d: d's gradient first (0.5 s), then c (0.75 s), b before c (0.6 s: it
  // counts as ready with c), a at 2 s.
  const auto layers = fusion_layers(params, {2.0, 0.6, 0.75, 0.5});
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layers[0].bytes, 4 * 4);
  EXPECT_EQ(layers[1].bytes, 30 * 4);
  EXPECT_EQ(layers[2].bytes, 20 * 4);
  EXPECT_EQ(layers[3].bytes, 10 * 4);
  EXPECT_DOUBLE_EQ(layers[0].backward_seconds, 0.5);
  EXPECT_DOUBLE_EQ(layers[1].backward_seconds, 0.25);
  EXPECT_DOUBLE_EQ(layers[2].backward_seconds, 0.0);
  EXPECT_DOUBLE_EQ(layers[3].backward_seconds, 1.25);
  for (const auto& l : fusion_layers(params)) EXPECT_EQ(l.backward_seconds, 0);
  EXPECT_THROW(fusion_layers(params, {1.0}), std::invalid_argument);
  // make_buckets is the size grouping of these layers: 40 floats a bucket gives [d, c] (34) and
  // [b, a] (30).
  const auto fixed = make_buckets(params, 40 * 4);
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(fixed[0].entries.size(), 2u);
  EXPECT_EQ(fixed[1].entries[0].name, "b");
  EXPECT_EQ(fixed[1].entries[1].name, "a");
}

TEST(FusionBuckets, GradientTimesFollowBackwardsOrder) {
  torch::manual_seed(5);
  torch::nn::Sequential net(torch::nn::Linear(32, 64), torch::nn::ReLU(), torch::nn::Linear(64, 64),
                            torch::nn::ReLU(), torch::nn::Linear(64, 4));
  std::vector<NamedTensor> params;
  for (auto& p : net->named_parameters()) params.push_back({p.key(), p.value()});
  const auto x = torch::randn({16, 32});
  int passes = 0;
  const std::vector<double> ready = gradient_ready_seconds(
      params,
      [&] {
        ++passes;
        return net->forward(x).pow(2).mean();
      },
      1, 3);
  EXPECT_EQ(passes, 4);
  ASSERT_EQ(ready.size(), params.size());
  for (const double t : ready) EXPECT_GE(t, 0);
  // A chain's backward reaches the last layer's weight before the first layer's.
  EXPECT_LE(ready[4], ready[0]);  // 4.weight (the last Linear's) before 0.weight
  for (const auto& p : params) EXPECT_FALSE(p.tensor.grad().defined()) << p.name;
  // The hooks are gone: a later backward is not timed (and does not fail).
  net->forward(x).sum().backward();
  EXPECT_THROW(gradient_ready_seconds(
                   params, [&] { return net->forward(x).sum(); }, 0, 0),
               std::invalid_argument);
}

}  // namespace
}  // namespace cedar
