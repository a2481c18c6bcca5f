// fp16 compression: the codec's decoded values are the IEEE half rounding of the inputs (nearest,
// ties to even, overflow to infinity, tiny values to subnormals or zero) in 2 bytes per value,
// payloads of any other size are rejected, and on several ranks every rank holds the fp32 average
// of the ranks' halves, with exact metered byte counts (also for ResNet-20's gradients).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/codecs.h"
#include "comm/bus_bytes.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::decaying_lr_options;
using testing::decode_error;
using testing::filler_bytes;
using testing::quantizer_grads;
using testing::StepOptions;

class Fp16Ranks : public ::testing::TestWithParam<int> {};

TEST_P(Fp16Ranks, AverageOfTheHalvesAndTwoBytesPerElement) {
  const int P = GetParam();
  auto res = testing::run_steps(P, "fp16", "{}", 2, quantizer_grads, decaying_lr_options());
  testing::expect_ranks_agree(res);
  int64_t n = 0;
  for (const auto& g : quantizer_grads(0, 0)) n += g.numel();
  for (int64_t t = 0; t < 2; ++t) {
    for (size_t i = 0; i < res[0][t].grads.size(); ++i) {
      at::Tensor sum = quantizer_grads(0, t)[i].to(at::kHalf).to(at::kFloat);
      for (int r = 1; r < P; ++r) sum.add_(quantizer_grads(r, t)[i].to(at::kHalf).to(at::kFloat));
      at::Tensor want = sum.div_(P);
      EXPECT_TRUE(torch::equal(res[0][t].grads[i], want)) << "step " << t << " tensor " << i;
    }
    EXPECT_EQ(res[0][t].comm.payload_bytes, 2 * n);
    EXPECT_EQ(res[0][t].comm.bus_bytes, allgather_bus_bytes(2 * n * P, P));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Fp16Ranks, ::testing::Values(2, 4));

TEST(Fp16, HalfPrecisionRangeAndRounding) {
  at::Tensor q = testing::reduce_once(*testing::make_algorithm("fp16"),
                                      torch::tensor({1.0f, 1.0f + 1e-4f, 70000.0f, 1e-8f}), 0,
                                      StepOptions{77, 1});
  EXPECT_EQ(q[0].item<float>(), 1.0f);
  EXPECT_EQ(q[1].item<float>(), 1.0f);  // the nearest half to 1.0001 is 1 (spacing 2^-10)
  EXPECT_TRUE(std::isinf(q[2].item<float>()));
  EXPECT_EQ(q[3].item<float>(), 0.0f);
}

// The codec alone, on hand-picked values whose half is known and on a thousand values over a
// wide range: each decoded value is the half nearest to its input, each payload byte pair that
// half's bits.
TEST(Fp16, CodecDecodesTheHalfRoundingOfEveryValue) {
  const float inf = std::numeric_limits<float>::infinity();
  const float u = std::ldexp(1.0f, -24);  // the smallest half subnormal
  // {input, its half}: the largest half; the midpoint to the next binade (ties to even: inf);
  // ties between 1 and 1 + 2^-10 (to 1) and between 1 + 2^-10 and 1 + 2^-9 (to 1 + 2^-9);
  // subnormals: u, half of u (a tie with 0: to 0) and 3/4 of u (to u); signs and negative zero.
  const std::vector<std::pair<float, float>> known = {
      {65504.0f, 65504.0f},
      {65520.0f, inf},
      {-70000.0f, -inf},
      {1.0f + std::ldexp(1.0f, -11), 1.0f},
      {1.0f + 3 * std::ldexp(1.0f, -11), 1.0f + std::ldexp(1.0f, -9)},
      {u, u},
      {u / 2, 0.0f},
      {-0.75f * u, -u},
      {-0.0f, -0.0f},
      {-2.5f, -2.5f}};
  std::vector<float> in, want;
  for (const auto& [x, h] : known) {
    in.push_back(x);
    want.push_back(h);
  }
  auto codec = make_fp16_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  const int64_t n = static_cast<int64_t>(in.size());
  at::Tensor payload = codec->compress(torch::tensor(in), gen);
  ASSERT_EQ(payload.numel(), 2 * n);
  EXPECT_EQ(codec->payload_bytes(n), 2 * n);
  at::Tensor decoded = codec->decompress(payload, n);
  for (int64_t i = 0; i < n; ++i) {
    const float got = decoded[i].item<float>();
    EXPECT_EQ(got, want[static_cast<size_t>(i)]) << "input " << in[static_cast<size_t>(i)];
    EXPECT_EQ(std::signbit(got), std::signbit(want[static_cast<size_t>(i)])) << i;
  }

  at::Tensor exponents = torch::randint(-8, 5, {1000}, make_generator(7, 0, 0)).to(at::kFloat);
  at::Tensor x = torch::randn({1000}, make_generator(6, 0, 0)) * torch::pow(10.0f, exponents);
  at::Tensor p = codec->compress(x, gen);
  ASSERT_EQ(p.numel(), 2000);
  at::Tensor halves = x.to(at::kHalf);
  EXPECT_TRUE(testing::same_bits(p, as_bytes(halves)));
  EXPECT_TRUE(testing::same_bits(codec->decompress(p, 1000), halves.to(at::kFloat)));
}

TEST(Fp16Payload, OnlyTwoBytesPerElementDecode) {
  const std::vector<float> values = testing::codec_test_values();  // 13 values
  auto codec = make_fp16_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  const at::Tensor payload = codec->compress(at::tensor(values), gen);
  ASSERT_EQ(payload.numel(), 26);
  const at::Tensor y = codec->decompress(payload, 13);
  for (size_t i = 0; i < values.size(); ++i)  // every value is exact in half precision
    EXPECT_EQ(y[static_cast<int64_t>(i)].item<float>(), values[i]) << i;
  for (int64_t n : {0, 1, 25, 27, 52}) {
    const std::string message = decode_error(*codec, filler_bytes(n), 13);
    EXPECT_NE(message.find("fp16: a payload of " + std::to_string(n) + " bytes"), std::string::npos)
        << n << ": " << message;
    EXPECT_NE(message.find("expected 26 uint8 bytes"), std::string::npos) << n << ": " << message;
  }
  EXPECT_NE(decode_error(*codec, at::zeros({13}, at::kHalf), 13)
                .find("fp16: a payload of 13 bytes (Half"),
            std::string::npos);
}

// Two bytes per value.
TEST(Fp16, BytesPerStepForResNet20Gradients) {
  int64_t total = 0;
  for (const auto& s : testing::resnet20_shapes()) total += c10::multiply_integers(s);
  for (int64_t bytes : testing::resnet20_step_payloads("fp16", "{}")) EXPECT_EQ(bytes, 2 * total);
}

}  // namespace
}  // namespace cedar
