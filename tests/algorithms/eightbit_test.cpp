// GRACE's 8-bit quantization: the magnitude table (its rule and GRACE's own constants), each value
// decoded to its sign times the largest table magnitude not above |x|/max|x| times max|x| (an
// oracle by linear search), zeros and non-finite inputs, the payload layout and its size, the
// tensor-op form with the CPU kernel's bytes; and the algorithm: a plain oracle of the averaged
// decodings on 2 and 4 ranks, agreeing ranks, and bytes per step from the format.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/eightbit_codec.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

constexpr uint64_t kEightBitSeed = 8;
constexpr int64_t kEightBitBucket = 1;

at::Tensor round_trip(const at::Tensor& x) {
  auto codec = make_eightbit_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  return codec->decompress(codec->compress(x, gen), x.numel());
}

// 127 increasing magnitudes in (0, 1) after the zero: 2·2^(5−k) in each decade [10^−k−1, 10^−k)
// for k = 5 .. 0 and the last one; a few of GRACE's fp32 constants (its u8bit table, index 1, 2,
// 63, 94, 95, 126, 127) to within 2 ulps.
TEST(EightBitCodec, MagnitudeTableIsDettmersDynamicTypeAsGraceHoldsIt) {
  const float* m = eightbit_magnitudes();
  EXPECT_EQ(m[0], 0.0f);
  for (int j = 1; j < kEightBitLevels; ++j) ASSERT_GT(m[j], m[j - 1]) << j;
  EXPECT_LT(m[kEightBitLevels - 1], 1.0f);
  int j = 1;
  for (int k = 5; k >= 0; --k) {
    int in_decade = 0;
    while (j < kEightBitLevels - 1 && m[j] < std::pow(10.0, -k)) ++in_decade, ++j;
    EXPECT_EQ(in_decade, 2 << (5 - k)) << "decade 1e-" << k;
  }
  EXPECT_EQ(m[127], 0.995703125f);
  const std::vector<std::pair<int, float>> grace = {
      {1, 2.7500000e-06f},  {2, 7.2499997e-06f},   {63, 1.0546875e-01f}, {94, 4.4453126e-01f},
      {95, 4.5859376e-01f}, {126, 9.9140614e-01f}, {127, 9.9570298e-01f}};
  for (const auto& [index, value] : grace) {
    int32_t a, b;
    std::memcpy(&a, &m[index], 4);
    std::memcpy(&b, &value, 4);
    EXPECT_LE(std::abs(a - b), 2) << index << ": " << m[index] << " and GRACE's " << value;
  }
}

// The documented rule, searched linearly: the largest m_j <= r (0 below m_1).
float expected_value(float x, float s) {
  const float* m = eightbit_magnitudes();
  const float r = std::fabs(x) / s;
  int j = 0;
  for (int k = 1; k < kEightBitLevels; ++k)
    if (m[k] <= r) j = k;
  const float magnitude = m[j] * s;
  return std::signbit(x) ? -magnitude : magnitude;
}

TEST(EightBitCodec, EachValueIsItsSignTimesTheLargestTableMagnitudeNotAboveIt) {
  at::Generator gen = make_generator(3, 0, 0);
  at::Tensor x = torch::cat({torch::randn({3000}, gen), torch::randn({500}, gen) * 1e-4,
                             torch::rand({500}, gen) * 1e-6, torch::tensor({0.0f, -0.0f, -9.0f})});
  const at::Tensor d = round_trip(x);
  const float s = 9.0f;  // max |x|
  ASSERT_EQ(x.abs().max().item<float>(), s);
  const auto xs = testing::values_of(x), ds = testing::values_of(d);
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(ds[i], expected_value(xs[i], s)) << xs[i];
    ASSERT_LE(std::fabs(ds[i]), std::fabs(xs[i])) << "rounded toward zero";
    ASSERT_EQ(std::signbit(ds[i]), std::signbit(xs[i])) << xs[i];
  }
  EXPECT_EQ(ds.back(), -0.995703125f * 9.0f) << "the largest value takes the last magnitude";
  // In the top decade (|x| >= s/10, 64 magnitudes) a value loses less than one step there: at
  // most (m_64 − m_63)/m_64 = 0.0109375/0.11640625 < 9.4% of it.
  int64_t top = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    if (std::fabs(xs[i]) >= s / 10) {
      ASSERT_LE(std::fabs(xs[i] - ds[i]), 0.094 * std::fabs(xs[i])) << xs[i];
      ++top;
    }
  EXPECT_GT(top, 100);
}

// With max |x| = 1 (so r = |x|): every magnitude of the table and its fp32 neighbours, and the
// edges of the encoder's search slices (every fp32 whose low 16 bits are 0, and its neighbours)
// in (0, 1), level as the linear search says.
TEST(EightBitCodec, LevelsAtTheTableValuesAndTheSearchEdges) {
  const float* m = eightbit_magnitudes();
  std::vector<float> r = {1.0f};
  for (int j = 1; j < kEightBitLevels; ++j)
    for (float v : {m[j], std::nextafter(m[j], 0.0f), std::nextafter(m[j], 2.0f)}) r.push_back(v);
  for (uint32_t bits = 1 << 16; bits < 0x3f800000u; bits += 1 << 16) {
    float v;
    std::memcpy(&v, &bits, 4);
    for (float w : {v, std::nextafter(v, 0.0f), std::nextafter(v, 2.0f)}) r.push_back(w);
  }
  const at::Tensor x = torch::tensor(r);
  const auto d = testing::values_of(round_trip(x));
  for (size_t i = 0; i < r.size(); ++i) ASSERT_EQ(d[i], expected_value(r[i], 1.0f)) << r[i];
}

// All zeros decode to zeros with their signs; a NaN or an infinity makes the scale non-finite and
// every decoded value NaN.
TEST(EightBitCodec, ZerosAndNonFiniteValues) {
  EXPECT_TRUE(same_bits(round_trip(torch::tensor({0.0f, -0.0f})), torch::tensor({0.0f, -0.0f})));
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    const at::Tensor d = round_trip(torch::tensor({1.0f, bad, -2.0f}));
    EXPECT_TRUE(d.isnan().all().item<bool>()) << bad;
  }
}

// [fp32 max |x|][n bytes, index | sign << 7]: 4 + n bytes; other sizes are refused.
TEST(EightBitCodec, PayloadIsTheScaleAndOneBytePerValue) {
  auto codec = make_eightbit_compressor();
  const float* m = eightbit_magnitudes();
  for (int64_t n : {1, 7, 1000}) {
    const at::Tensor x = torch::randn({n}, make_generator(n, 2, 0));
    at::Generator gen = make_generator(0, 0, 0);
    const at::Tensor payload = codec->compress(x, gen);
    ASSERT_EQ(payload.numel(), 4 + n);
    float s;
    std::memcpy(&s, payload.data_ptr<uint8_t>(), 4);
    EXPECT_EQ(s, x.abs().max().item<float>());
    const auto xs = testing::values_of(x);
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t b = payload[4 + i].item<uint8_t>();
      ASSERT_EQ((b & 0x80) != 0, xs[static_cast<size_t>(i)] < 0);
      ASSERT_EQ(std::fabs(expected_value(xs[static_cast<size_t>(i)], s)), m[b & 0x7f] * s);
    }
    EXPECT_NE(testing::decode_error(*codec, payload, n + 1), "");
    EXPECT_NE(testing::decode_error(*codec, testing::filler_bytes(3), 0), "");
    EXPECT_THROW(codec->decompress(payload, -1), std::invalid_argument) << "a negative count";
  }
}

TEST(EightBitCodec, TensorOpFormWritesTheKernelBytes) {
  at::Generator gen = make_generator(5, 0, 0);
  std::vector<at::Tensor> inputs = {torch::randn({5003}, gen), torch::randn({5003}, gen) * 1e-3,
                                    torch::tensor({0.0f, -0.0f}), torch::zeros({0}),
                                    torch::tensor({1.0f, std::nanf(""), -3.0f})};
  for (const at::Tensor& x : inputs) {
    at::Tensor kernel = at::empty({eightbit_payload_bytes(x.numel())}, at::kByte);
    eightbit_encode(x.data_ptr<float>(), x.numel(), kernel.data_ptr<uint8_t>());
    const at::Tensor ops = generic::eightbit_encode(x);
    ASSERT_TRUE(same_bits(ops, kernel)) << x.numel();
    at::Tensor decoded = at::empty({x.numel()});
    eightbit_decode(kernel.data_ptr<uint8_t>(), x.numel(), decoded.data_ptr<float>());
    EXPECT_TRUE(same_bits(generic::eightbit_decode(ops, x.numel()), decoded)) << x.numel();
  }
}

// ---------------------------------------------------------------- the algorithm

std::vector<at::Tensor> rank_grads(int r, int64_t t) {
  at::Generator gen = make_generator(41, r, t, 1);
  return {torch::randn({6, 2, 3, 3}, gen) * (r + 1), torch::randn({777}, gen),
          torch::randn({9}, gen) * 1e-3};
}

// Every rank applies the average over ranks of each rank's decoded 8-bit gradients; one allgather
// of Σ(4 + n_i) bytes per rank.
TEST(EightBit, RanksApplyTheAverageOfTheirQuantizedGradients) {
  for (int P : {2, 4}) {
    auto results = testing::run_steps(P, "eightbit", "{}", 2, rank_grads,
                                      testing::StepOptions{kEightBitSeed, kEightBitBucket});
    testing::expect_ranks_agree(results);
    const int64_t formula = (4 + 108) + (4 + 777) + (4 + 9);
    testing::expect_allgather_of_decodings(
        results,
        [](int r, int64_t t) {
          std::vector<at::Tensor> decoded;
          for (const at::Tensor& g : rank_grads(r, t))
            decoded.push_back(round_trip(g.reshape({-1})));
          return decoded;
        },
        formula);
  }
}

TEST(EightBit, BytesPerStepForResNet20Gradients) {
  const auto shapes = testing::resnet20_shapes();
  const int64_t formula = 4 * static_cast<int64_t>(shapes.size()) + 269722;
  for (int64_t bytes : testing::resnet20_step_payloads("eightbit", "{}")) EXPECT_EQ(bytes, formula);
}

TEST(EightBit, TakesNoParameters) {
  EXPECT_THROW(testing::make_algorithm("eightbit", "{bits: 8}"), ConfigError);
  EXPECT_TRUE(eightbit_algorithm().params().empty());
}

}  // namespace
}  // namespace cedar
