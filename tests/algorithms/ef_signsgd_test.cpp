// EF-signSGD (Karimireddy et al. 2019): the scale is the mean absolute value and the memory the
// exact residual, the paper's Algorithm 1 in plain LibTorch over several steps on several ranks
// with a decaying learning rate, rank agreement and exact metered byte counts (also for
// ResNet-20's gradients), the scaled-sign codec's payload bit for bit, and the codec given
// payloads of the wrong size (a peer's bytes are untrusted): rejected with a message naming the
// codec, the size found and the size expected, before reading any of it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/compressor.h"
#include "comm/bus_bytes.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::ceil_div;
using testing::decaying_lr_options;
using testing::decode_error;
using testing::filler_bytes;
using testing::make_algorithm;
using testing::quantizer_grads;
using testing::reduce_once;
using testing::StepOptions;

constexpr uint64_t kEfSignSeed = 77;
constexpr int64_t kEfSignBucket = 1;

// The learning rate of decaying_lr_options() at step t.
double lr_of(int64_t t) { return 0.1 / (1 + t); }

TEST(EfSignSgd, ScaleIsMeanAbsoluteValueAndMemoryIsTheExactResidual) {
  auto alg = make_algorithm("ef-signsgd");
  EXPECT_TRUE(alg->applies_momentum());
  at::Tensor g = torch::randn({101}, make_generator(4, 0, 0));
  const double eta = 0.05;
  const StepOptions at_eta{kEfSignSeed, kEfSignBucket, eta};
  // Step 0: p = η·g, Δ = (‖p‖₁/d)·sign(p); the update written is Δ/η.
  at::Tensor p = g * static_cast<float>(eta);
  at::Tensor delta = reduce_once(*alg, g, 0, at_eta) * static_cast<float>(eta);
  const double scale = p.abs().sum().item<double>() / 101;
  EXPECT_TRUE(torch::allclose(delta.abs(), torch::full({101}, scale), 1e-5, 0));
  EXPECT_TRUE(torch::equal(delta > 0, p >= 0));
  // Step 1 with g = 0: p = e = p0 − Δ0, so this step's Δ exposes the memory exactly.
  at::Tensor e = p - (p >= 0).to(at::kFloat).mul(2).sub(1).mul(static_cast<float>(scale));
  at::Tensor delta1 = reduce_once(*alg, torch::zeros({101}), 1, at_eta) * static_cast<float>(eta);
  const double scale1 = e.abs().sum().item<double>() / 101;
  EXPECT_TRUE(torch::allclose(delta1.abs(), torch::full({101}, scale1), 1e-5, 0));
  EXPECT_TRUE(torch::equal(delta1 > 0, e >= 0));
  EXPECT_THROW(reduce_once(*alg, g, 2, StepOptions{kEfSignSeed, kEfSignBucket, 0.0}),
               std::invalid_argument);
}

// (ranks, error feedback on): with error feedback off (error_feedback: false, the scaled-sign
// control of the paper's Sec. 3), p = η·g and nothing is kept.
class EfSignSgdRanks : public ::testing::TestWithParam<std::tuple<int, bool>> {};

// Algorithm 1 of the paper per rank in plain LibTorch over 5 steps with a decaying lr; the
// update written is mean(Δ)/η.
TEST_P(EfSignSgdRanks, OracleAgreementAndExactBytes) {
  const auto [P, feedback] = GetParam();
  const int steps = 5;
  auto res = testing::run_steps(P, "ef-signsgd", feedback ? "{}" : "{error_feedback: false}", steps,
                                quantizer_grads, decaying_lr_options());
  testing::expect_ranks_agree(res);
  std::vector<std::vector<at::Tensor>> e(P);
  int64_t bytes = 0;
  for (const auto& g : quantizer_grads(0, 0)) bytes += 4 + ceil_div(g.numel(), 8);
  for (int64_t t = 0; t < steps; ++t) {
    const float eta = static_cast<float>(lr_of(t));
    std::vector<at::Tensor> sum;
    for (int r = 0; r < P; ++r) {
      auto g = quantizer_grads(r, t);
      if (e[r].empty())
        for (auto& x : g) e[r].push_back(torch::zeros_like(x));
      for (size_t i = 0; i < g.size(); ++i) {
        at::Tensor p = eta * g[i] + e[r][i];
        const float scale =
            static_cast<float>(p.abs().to(at::kDouble).sum().item<double>() / double(p.numel()));
        at::Tensor delta =
            torch::where(p >= 0, torch::full_like(p, scale), torch::full_like(p, -scale));
        if (feedback) e[r][i] = p - delta;
        if (r == 0)
          sum.push_back(delta);
        else
          sum[i] = sum[i] + delta;
      }
    }
    for (size_t i = 0; i < sum.size(); ++i) {
      at::Tensor want = sum[i] / P / eta;
      EXPECT_TRUE(torch::allclose(res[0][t].grads[i], want, 1e-5, 1e-6))
          << "step " << t << " tensor " << i << " max diff "
          << (res[0][t].grads[i] - want).abs().max().item<double>();
    }
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(res[r][t].comm.payload_bytes, bytes);
      EXPECT_EQ(res[r][t].comm.bus_bytes, allgather_bus_bytes(bytes * P, P));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, EfSignSgdRanks,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Bool()));

// One fp32 scale and one bit per value per tensor, each tensor in whole bytes.
TEST(EfSignSgd, BytesPerStepForResNet20Gradients) {
  int64_t formula = 0;
  for (const auto& s : testing::resnet20_shapes())
    formula += 4 + ceil_div(c10::multiply_integers(s), 8);
  for (int64_t bytes : testing::resnet20_step_payloads("ef-signsgd", "{}"))
    EXPECT_EQ(bytes, formula);
}

// ---------------------------------------------------------------- the scaled-sign codec

const std::vector<float> kValues = testing::codec_test_values();  // 13 values

TEST(EfSignSgdPayload, GoodPayloadDecodesToScaledSigns) {
  auto codec = make_scaled_sign_compressor();
  const at::Tensor x = at::tensor(kValues);
  at::Generator gen = make_generator(1, 0, 0);
  const at::Tensor payload = codec->compress(x, gen);
  ASSERT_EQ(payload.numel(), 4 + 2);  // fp32 scale + 13 sign bits in 2 bytes
  const at::Tensor y = codec->decompress(payload, 13);
  double l1 = 0;
  for (float v : kValues) l1 += std::fabs(v);
  const float scale = static_cast<float>(l1 / 13);
  for (size_t i = 0; i < kValues.size(); ++i)
    EXPECT_FLOAT_EQ(y[static_cast<int64_t>(i)].item<float>(), kValues[i] >= 0 ? scale : -scale)
        << i;
}

// The payload bit for bit: the fp32 scale of ‖p‖₁ summed in element order in fp64 over d, then
// the sign bits of pack_bits(p >= 0), for Gaussian and heavy-tailed tensors around the sizes of
// the encoder's groups and chunks.
TEST(EfSignSgdPayload, ScaleOfTheElementOrderSumThenTheSignBits) {
  auto codec = make_scaled_sign_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  for (int64_t n : {1, 7, 8, 9, 4096, 4097, 100003}) {
    for (bool heavy : {false, true}) {
      at::Tensor x = at::randn({n}, make_generator(n, 3, 0));
      if (heavy)
        x = x * at::pow(2.0f, at::randint(-40, 10, {n}, make_generator(n, 4, 0)).to(at::kFloat));
      x.data_ptr<float>()[0] = -0.0f;
      double l1 = 0;
      for (int64_t i = 0; i < n; ++i) l1 += std::fabs(x.data_ptr<float>()[i]);
      const float scale = static_cast<float>(l1 / static_cast<double>(n));
      const at::Tensor want = at::cat({as_bytes(at::tensor({scale})), pack_bits(x.ge(0), 1)});
      EXPECT_TRUE(testing::same_bits(codec->compress(x, gen), want))
          << n << (heavy ? " heavy-tailed" : " Gaussian");
    }
  }
}

TEST(EfSignSgdPayload, WrongSizesAreRejected) {
  auto codec = make_scaled_sign_compressor();
  // 13 elements take 4 + 2 bytes; shorter than the scale, a byte short, a byte over, far over.
  for (int64_t n : {0, 3, 4, 5, 7, 64}) {
    const std::string message = decode_error(*codec, filler_bytes(n), 13);
    EXPECT_NE(
        message.find("ef-signsgd: a payload of " + std::to_string(n) + " bytes for 13 elements"),
        std::string::npos)
        << n << ": " << message;
    EXPECT_NE(message.find("expected 6"), std::string::npos) << n << ": " << message;
  }
  EXPECT_EQ(decode_error(*codec, filler_bytes(6), 13), "");
  EXPECT_EQ(decode_error(*codec, filler_bytes(4), 0), "");  // an empty tensor: the scale alone
}

TEST(EfSignSgdPayload, MistypedPayloadsAreRejected) {
  auto codec = make_scaled_sign_compressor();
  const std::string mistyped = "ef-signsgd: expected a 1-D uint8 payload";
  EXPECT_NE(decode_error(*codec, at::zeros({6}, at::kFloat), 13).find(mistyped), std::string::npos);
  EXPECT_NE(decode_error(*codec, filler_bytes(6).view({2, 3}), 13).find(mistyped),
            std::string::npos);
  EXPECT_NE(decode_error(*codec, filler_bytes(6), -1).find("ef-signsgd: negative element count -1"),
            std::string::npos);
}

}  // namespace
}  // namespace cedar
