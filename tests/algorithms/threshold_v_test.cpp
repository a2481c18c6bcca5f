// Threshold-v sparsification with error feedback (Dutta et al., AAAI 2020; GRACE's `threshold`):
// exactly the coordinates at or above v are sent, as (int32 index, fp32 value) pairs whose bytes
// follow from the format and the counts; what is not sent waits in the memory until it reaches v;
// without memory nothing waits; at v = 0 every coordinate is sent and the update is dense SGD's,
// bit for bit; every rank agrees; bad parameters are refused.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::make_algorithm;
using testing::randn_seeded;

// g with everything below v in magnitude zeroed: the coordinates threshold-v sends.
at::Tensor at_or_above(const at::Tensor& g, float v) { return g * g.abs().ge(v); }

// One step on one rank without memory: the update is the gradient at or above v (the values at
// exactly v, +-v, sent; the next float below v and zeros not), and the step's payload is one
// 8-byte length per tensor and 8 bytes per sent coordinate.
TEST(ThresholdV, SendsExactlyTheCoordinatesAtOrAboveV) {
  const float v = 0.5f;
  const float below = std::nextafter(v, 0.0f);
  auto algo = make_algorithm("threshold-v", "{threshold: 0.5, error_feedback: false}");
  GradBucket bucket = testing::bucket_of_shapes({{2, 4}, {3}});
  const at::Tensor first =
      torch::tensor({v, -v, below, -below, 0.0f, 2.0f, -3.0f, 0.25f}).view({2, 4});
  const at::Tensor second = torch::tensor({0.0f, 0.0f, 0.0f});
  bucket.entries[0].grad.copy_(first);
  bucket.entries[1].grad.copy_(second);
  LocalCommunicator comm;
  StepContext ctx;
  ctx.lr = 0.1;
  algo->reduce_gradients(bucket, comm, ctx);
  EXPECT_TRUE(
      torch::equal(bucket.entries[0].grad,
                   torch::tensor({v, -v, 0.0f, 0.0f, 0.0f, 2.0f, -3.0f, 0.0f}).view({2, 4})));
  EXPECT_TRUE(torch::equal(bucket.entries[1].grad, second));
  EXPECT_EQ(ctx.stats["threshold-v.sent"], 4);
  EXPECT_EQ(ctx.stats["threshold-v.payload_bytes"], 8 * 2 + 8 * 4);  // lengths, then 4 pairs
}

// The rule over steps, against an oracle of it (p = g + e; s = p at or above v; e = p − s) with
// a constant learning rate: a coordinate below v accumulates in the memory until it is sent.
TEST(ThresholdV, WithMemoryTheRemainderIsSentOnceItReachesV) {
  auto algo = make_algorithm("threshold-v", "{threshold: 0.5}");
  GradBucket bucket = testing::bucket_of_shapes({{50}});
  LocalCommunicator comm;
  at::Tensor e = torch::zeros({50});
  for (int step = 0; step < 6; ++step) {
    const at::Tensor g = randn_seeded(50, 20 + step) * 0.3;
    bucket.entries[0].grad.copy_(g);
    StepContext ctx;
    ctx.step = step;
    ctx.lr = 0.1;
    algo->reduce_gradients(bucket, comm, ctx);
    const at::Tensor p = g + e;
    const at::Tensor sent = at_or_above(p, 0.5f);
    e = p - sent;
    EXPECT_TRUE(torch::equal(bucket.entries[0].grad, sent)) << "step " << step;
    EXPECT_EQ(ctx.stats["threshold-v.sent"], sent.ne(0).sum().item<int64_t>()) << "step " << step;
  }
  // A coordinate of 0.3 per step is held twice and sent at the second step's 0.6.
  auto held = make_algorithm("threshold-v", "{threshold: 0.5}");
  GradBucket one = testing::bucket_of_shapes({{1}});
  std::vector<float> updates;
  for (int step = 0; step < 3; ++step) {
    one.entries[0].grad.fill_(0.3f);
    StepContext ctx;
    ctx.lr = 0.1;
    held->reduce_gradients(one, comm, ctx);
    updates.push_back(one.entries[0].grad.item<float>());
  }
  EXPECT_EQ(updates[0], 0.0f);
  EXPECT_FLOAT_EQ(updates[1], 0.6f);
  EXPECT_EQ(updates[2], 0.0f);
}

TEST(ThresholdV, WithoutMemoryNothingWaits) {
  auto algo = make_algorithm("threshold-v", "{threshold: 0.5, error_feedback: false}");
  GradBucket bucket = testing::bucket_of_shapes({{1}});
  LocalCommunicator comm;
  for (int step = 0; step < 3; ++step) {
    bucket.entries[0].grad.fill_(0.3f);
    StepContext ctx;
    ctx.lr = 0.1;
    algo->reduce_gradients(bucket, comm, ctx);
    EXPECT_EQ(bucket.entries[0].grad.item<float>(), 0.0f) << "step " << step;
  }
}

// v = 0 (its lossless setting): every coordinate is sent, zeros too (|0| >= 0), and the update is
// dense SGD's average, bit for bit, on 2 ranks; the metered payload of each rank is the
// allgatherv's: the lengths of the 2 tensors, 8 bytes per coordinate, and its own 8-byte count.
TEST(ThresholdV, AtZeroEveryCoordinateIsSentAndTheUpdateIsDenseSgds) {
  auto grads_of = [](int r, int64_t t) {
    at::Tensor w = randn_seeded(24, 10 * t + r).view({4, 6});
    w[0][0] = 0.0f;
    return std::vector<at::Tensor>{w, randn_seeded(5, 100 + 10 * t + r)};
  };
  const auto got = testing::run_steps(2, "threshold-v", "{threshold: 0}", 3, grads_of);
  const auto dense = testing::run_steps(2, "dense", "{}", 3, grads_of);
  testing::expect_ranks_agree(got);
  for (int64_t t = 0; t < 3; ++t) {
    for (size_t i = 0; i < 2; ++i)
      EXPECT_TRUE(testing::same_bits(got[0][t].grads[i], dense[0][t].grads[i]))
          << "step " << t << " tensor " << i;
    EXPECT_EQ(got[0][t].stats.at("threshold-v.sent"), 24 + 5);
    EXPECT_EQ(got[0][t].comm.payload_bytes, 8 * 2 + 8 * (24 + 5) + 8);
  }
  const AlgorithmInfo& info = find_algorithm("threshold-v");
  ASSERT_EQ(info.lossless.size(), 1u);
  EXPECT_EQ(info.lossless[0].params, "{threshold: 0}");
}

// Every rank ends with the same average of the ranks' coordinates at or above v (first step:
// e = 0); each rank meters one allgatherv of its own count of pairs, and the counts differ.
class ThresholdVRanks : public ::testing::TestWithParam<int> {};

TEST_P(ThresholdVRanks, AgreeOnTheAverageAndCountTheirOwnBytes) {
  const int n = GetParam();
  const float v = 1.5f;
  // Rank r's gradient has scale 1 + r / 2, so the ranks send different counts.
  auto grad_of = [](int r) { return (randn_seeded(300, 500 + r) * (1 + 0.5 * r)).view({30, 10}); };
  auto results = testing::on_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make_algorithm("threshold-v", "{threshold: 1.5}");
    GradBucket bucket = testing::bucket_of_shapes({{30, 10}});
    bucket.entries[0].grad.copy_(grad_of(comm.rank()));
    StepContext ctx;
    ctx.lr = 0.1;
    algo->reduce_gradients(bucket, comm, ctx);
    const int64_t k = grad_of(comm.rank()).abs().ge(v).sum().item<int64_t>();
    EXPECT_EQ(ctx.stats["threshold-v.sent"], k);
    EXPECT_EQ(comm.step().payload_bytes, n > 1 ? 8 + 8 * k + 8 : 0);
    EXPECT_EQ(comm.step().calls, 1);
    return bucket.flat.clone();
  });
  at::Tensor expect = torch::zeros({300});
  for (int r = 0; r < n; ++r) expect += at_or_above(grad_of(r), v).reshape({-1});
  expect /= n;
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(torch::equal(results[r], results[0])) << "rank " << r;
    EXPECT_TRUE(torch::allclose(results[r], expect, 1e-6, 1e-7)) << "rank " << r;
  }
  if (n > 1) {  // the ranks' counts differ: a length each, not one fixed size
    EXPECT_NE(grad_of(0).abs().ge(v).sum().item<int64_t>(),
              grad_of(1).abs().ge(v).sum().item<int64_t>());
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThresholdVRanks, ::testing::Values(1, 2, 3));

TEST(ThresholdV, ParametersAreCheckedAndResolved) {
  EXPECT_THROW(make_algorithm("threshold-v", "{threshold: -0.1}"), ConfigError);
  EXPECT_THROW(make_algorithm("threshold-v", "{ratio: 0.1}"), ConfigError);
  const YAML::Node resolved = testing::resolved_params("threshold-v");
  EXPECT_EQ(resolved["threshold"].as<double>(), 0.01);
  EXPECT_TRUE(resolved["error_feedback"].as<bool>());
}

}  // namespace
}  // namespace cedar
