// 1-bit SGD (Seide et al. 2014): each element decodes to the mean of its side of 0, the pair of
// values of least squared error; the error-feedback identity (what was sent plus the memory is
// what the gradients added up to) and the memory as the exact residual; a plain-LibTorch oracle
// on 2 and 4 ranks with and without error feedback; the payload layout and bytes per step from the
// format; and the tensor-op form, which writes the CPU kernel's bytes.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/onebit_codec.h"
#include "comm/bus_bytes.h"
#include "comm/inprocess_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::ceil_div;
using testing::same_bits;

constexpr uint64_t kOneBitSeed = 5;
constexpr int64_t kOneBitBucket = 2;

// 8 + ⌈n/8⌉: two fp32 means and one bit per element.
int64_t onebit_bytes(int64_t n) { return 8 + ceil_div(n, 8); }

// The means written out plainly: fp64 sums of each side in element order over its count.
std::pair<float, float> side_means(const at::Tensor& x) {
  double s[2] = {0, 0};
  int64_t c[2] = {0, 0};
  for (float v : testing::values_of(x.reshape({-1}))) {
    const int side = v >= 0 ? 1 : 0;
    s[side] += v;
    ++c[side];
  }
  auto mean = [&](int k) { return c[k] ? static_cast<float>(s[k] / double(c[k])) : 0.0f; };
  return {mean(0), mean(1)};
}

// Q(p): every element replaced by the mean of its side.
at::Tensor quantize(const at::Tensor& p) {
  const auto [neg, pos] = side_means(p);
  return torch::where(p >= 0, torch::full_like(p, pos), torch::full_like(p, neg));
}

at::Tensor round_trip(const at::Tensor& x) {
  auto codec = make_onebit_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  return codec->decompress(codec->compress(x, gen), x.numel());
}

TEST(OneBitCodec, EachElementDecodesToTheMeanOfItsSide) {
  at::Tensor x = torch::randn({1001}, make_generator(2, 0, 0)) + 0.3;
  x.narrow(0, 0, 3).copy_(torch::tensor({0.0f, -0.0f, 7.0f}));
  const at::Tensor d = round_trip(x);
  EXPECT_TRUE(same_bits(d, quantize(x)));
  const auto [neg, pos] = side_means(x);
  EXPECT_LT(neg, 0);
  EXPECT_GT(pos, 0);
  EXPECT_EQ(d[0].item<float>(), pos) << "0 is on the non-negative side";
  EXPECT_EQ(d[1].item<float>(), pos) << "-0 is on the non-negative side";
  // The least squared error among reconstructions split at 0: moving either value costs.
  auto err = [&](float a, float b) {
    return (x - torch::where(x >= 0, torch::full_like(x, b), torch::full_like(x, a)))
        .to(at::kDouble)
        .pow(2)
        .sum()
        .item<double>();
  };
  const double best = err(neg, pos);
  for (float delta : {-1e-2f, 1e-2f}) {
    EXPECT_GT(err(neg + delta, pos), best);
    EXPECT_GT(err(neg, pos + delta), best);
  }
}

// One side empty: its mean is 0 and no element decodes to it. A NaN falls on the negative side
// and makes its mean NaN.
TEST(OneBitCodec, EmptySidesAndNaN) {
  const at::Tensor pos = torch::tensor({1.0f, 2.0f, 6.0f});
  EXPECT_TRUE(same_bits(round_trip(pos), torch::full({3}, 3.0f)));
  EXPECT_TRUE(same_bits(round_trip(-pos), torch::full({3}, -3.0f)));
  const at::Tensor d = round_trip(torch::tensor({1.0f, std::nanf(""), -1.0f}));
  EXPECT_EQ(d[0].item<float>(), 1.0f);
  EXPECT_TRUE(std::isnan(d[1].item<float>()));
  EXPECT_TRUE(std::isnan(d[2].item<float>()));
}

// [fp32 mean of the negative side][fp32 mean of the non-negative side][bits, 1 for x >= 0, LSB
// first]: 8 + ⌈n/8⌉ bytes; a payload of another size is refused.
TEST(OneBitCodec, PayloadIsTwoMeansAndOneBitPerElement) {
  auto codec = make_onebit_compressor();
  for (int64_t n : {1, 7, 8, 9, 1000}) {
    const at::Tensor x = torch::randn({n}, make_generator(n, 1, 0));
    at::Generator gen = make_generator(3, 0, 0);
    const at::Tensor payload = codec->compress(x, gen);
    ASSERT_EQ(payload.numel(), onebit_bytes(n)) << n;
    const auto [neg, pos] = side_means(x);
    float head[2];
    std::memcpy(head, payload.data_ptr<uint8_t>(), 8);
    EXPECT_EQ(head[0], neg);
    EXPECT_EQ(head[1], pos);
    EXPECT_TRUE(torch::equal(unpack_bits(payload.narrow(0, 8, payload.numel() - 8), n, 1),
                             (x >= 0).to(at::kByte)));
    EXPECT_NE(testing::decode_error(*codec, payload, n + 8), "");
    EXPECT_NE(testing::decode_error(*codec, testing::filler_bytes(7), 0), "");
    EXPECT_THROW(codec->decompress(payload, -1), std::invalid_argument) << "a negative count";
  }
}

// Given the kernel's means, the tensor-op form (for gradients on a GPU) writes the kernel's bytes
// and decodes them to the same bits; its own means, by LibTorch's sums, agree to rounding.
TEST(OneBitCodec, TensorOpFormWritesTheKernelBytes) {
  const at::Tensor finite = torch::randn({9001}, make_generator(8, 0, 0));
  at::Tensor special = finite.clone();
  special.narrow(0, 0, 4).copy_(torch::tensor({0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                                               -std::numeric_limits<float>::infinity()}));
  for (const at::Tensor& v : {finite, special, torch::randn({3}), torch::zeros({0})}) {
    const OneBitMeans kernel = onebit_means(v.data_ptr<float>(), v.numel());
    if (std::isfinite(kernel.zero) && std::isfinite(kernel.one)) {
      const OneBitMeans ops = generic::onebit_means(v);
      EXPECT_NEAR(ops.zero, kernel.zero, 1e-6 * std::abs(kernel.zero));
      EXPECT_NEAR(ops.one, kernel.one, 1e-6 * std::abs(kernel.one));
    }
    auto codec = make_onebit_compressor();
    at::Generator gen = make_generator(0, 0, 0);
    const at::Tensor payload = codec->compress(v, gen);
    const at::Tensor encoded = generic::onebit_encode(v, kernel);
    ASSERT_TRUE(same_bits(encoded, payload)) << v.numel();
    EXPECT_TRUE(same_bits(generic::onebit_decode(encoded, v.numel()),
                          codec->decompress(payload, v.numel())));
  }
}

// ---------------------------------------------------------------- the algorithm

// On one rank the update is what was sent, Q(g + e), the memory kept per flattened tensor. Over
// steps: e_t = (g_t + e_{t−1}) − sent_t
// bit for bit, so Σ sent_t + e_T = Σ g_t up to the rounding of the sums.
TEST(OneBit, ErrorFeedbackKeepsWhatWasNotSent) {
  auto alg = testing::make_algorithm("onebit");
  LocalCommunicator local;
  GradBucket bucket = testing::bucket_of_shapes({{6, 5}, {11}});
  std::vector<NamedTensor> params;
  for (const auto& e : bucket.entries) params.push_back({e.name, e.param});
  alg->setup(params, local);
  std::vector<at::Tensor> sent_sum(2), grad_sum(2), memory(2);
  for (int64_t t = 0; t < 6; ++t) {
    std::vector<at::Tensor> g;
    for (size_t i = 0; i < 2; ++i) {
      const int64_t n = bucket.entries[i].grad.numel();
      g.push_back(torch::randn({n}, make_generator(t, static_cast<int>(i), 9)) + 0.2 * i);
      bucket.entries[i].grad.view({-1}).copy_(g[i]);
    }
    StepContext ctx;
    ctx.step = t;
    ctx.lr = 0.1;
    alg->reduce_gradients(bucket, local, ctx);
    AlgorithmState state;
    alg->save_state(state);
    for (size_t i = 0; i < 2; ++i) {
      const at::Tensor sent = bucket.entries[i].grad.reshape({-1}).clone();
      const at::Tensor p = t ? g[i] + memory[i] : g[i];
      EXPECT_TRUE(same_bits(sent, quantize(p))) << "step " << t;
      const at::Tensor e = state.at("memory." + bucket.entries[i].name);
      EXPECT_TRUE(same_bits(e, p - sent)) << "step " << t << " tensor " << i;
      memory[i] = e;
      sent_sum[i] = t ? sent_sum[i] + sent : sent;
      grad_sum[i] = t ? grad_sum[i] + g[i] : g[i];
      EXPECT_TRUE(torch::allclose(sent_sum[i] + e, grad_sum[i], 1e-5, 1e-5)) << "step " << t;
    }
  }
}

std::vector<at::Tensor> rank_grads(int r, int64_t t) {
  at::Generator gen = make_generator(21, r, t, 4);
  return {torch::randn({8, 3, 3}, gen) + 0.1 * r, torch::randn({300}, gen) * (r + 1),
          torch::randn({5}, gen) - 0.5};
}

class OneBitRanks : public ::testing::TestWithParam<std::tuple<int, bool>> {};

// Every rank applies the average of the ranks' Q(g + e), each rank with its own memory (none
// with error_feedback: false); one allgather of Σ(8 + ⌈n_i/8⌉) bytes per rank.
TEST_P(OneBitRanks, OracleAgreementAndBytes) {
  const auto [P, feedback] = GetParam();
  const int steps = 4;
  auto res = testing::run_steps(P, "onebit", feedback ? "{}" : "{error_feedback: false}", steps,
                                rank_grads, testing::StepOptions{kOneBitSeed, kOneBitBucket});
  testing::expect_ranks_agree(res);
  int64_t bytes = 0;
  for (const auto& g : rank_grads(0, 0)) bytes += onebit_bytes(g.numel());
  ASSERT_EQ(bytes, (8 + 9) + (8 + 38) + (8 + 1));
  std::vector<std::vector<at::Tensor>> e(P, std::vector<at::Tensor>(3));
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<at::Tensor> sum(3);
    for (int r = 0; r < P; ++r) {
      const auto g = rank_grads(r, t);
      for (size_t i = 0; i < g.size(); ++i) {
        const at::Tensor p = e[r][i].defined() ? g[i] + e[r][i] : g[i];
        const at::Tensor q = quantize(p);
        if (feedback) e[r][i] = p - q;
        sum[i] = r ? sum[i] + q : q;
      }
    }
    for (size_t i = 0; i < sum.size(); ++i)
      EXPECT_TRUE(torch::allclose(res[0][t].grads[i], sum[i] / P, 1e-6, 1e-6))
          << P << " ranks, step " << t << ", tensor " << i;
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(res[r][t].comm.calls, 1);
      EXPECT_EQ(res[r][t].comm.payload_bytes, bytes);
      EXPECT_EQ(res[r][t].comm.bus_bytes, allgather_bus_bytes(bytes * P, P));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, OneBitRanks,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Bool()));

TEST(OneBit, BytesPerStepForResNet20Gradients) {
  int64_t formula = 0;
  for (const auto& s : testing::resnet20_shapes())
    formula += onebit_bytes(c10::multiply_integers(s));
  for (int64_t bytes : testing::resnet20_step_payloads("onebit", "{}")) EXPECT_EQ(bytes, formula);
}

TEST(OneBit, ParametersAndUnknownKeys) {
  EXPECT_THROW(testing::make_algorithm("onebit", "{bits: 1}"), ConfigError);
  EXPECT_EQ(testing::resolved_params("onebit")["error_feedback"].as<bool>(), true);
  EXPECT_EQ(onebit_algorithm().name, "onebit");
}

}  // namespace
}  // namespace cedar
