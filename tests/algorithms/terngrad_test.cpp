// TernGrad (Wen et al. 2017): ternary values with the scaler of the gradient clipped at 2.5 sigma,
// unbiasedness for the clipped gradient, a plain-LibTorch oracle of the paper's rule over several
// steps on several ranks (with and without scaler sharing), rank agreement and exact metered
// byte counts, also for ResNet-20's gradients.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/counter_rng.h"
#include "comm/bus_bytes.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::ceil_div;
using testing::decaying_lr_options;
using testing::make_algorithm;
using testing::quantizer_grads;
using testing::reduce_once;
using testing::StepOptions;

constexpr uint64_t kTernGradSeed = 77;
constexpr int64_t kTernGradBucket = 1;

// Single-rank steps: the run seed and bucket of the multi-rank ones, lr 0.1.
const StepOptions kOnce{kTernGradSeed, kTernGradBucket};

TEST(TernGrad, ParametersAreValidated) {
  EXPECT_THROW(make_algorithm("terngrad", "{clip: -1}"), ConfigError);
  EXPECT_THROW(make_algorithm("terngrad", "{bits: 2}"), ConfigError);
  YAML::Node resolved = testing::resolved_params("terngrad");
  EXPECT_DOUBLE_EQ(resolved["clip"].as<double>(), 2.5);
  EXPECT_TRUE(resolved["scaler_sharing"].as<bool>());
  EXPECT_FALSE(make_algorithm("terngrad")->applies_momentum());
}

// Population standard deviation, as the reference code computes it.
double sigma_of(const at::Tensor& v) {
  at::Tensor d = v.to(at::kDouble);
  return (d - d.mean()).pow(2).mean().sqrt().item<double>();
}

TEST(TernGrad, ValuesAreTernaryWithTheScalerOfTheGradientClippedAt2_5Sigma) {
  at::Tensor v = torch::randn({1000}, make_generator(1, 0, 0));
  v[10] = 30.0f;
  v[11] = -25.0f;
  const double thr = 2.5 * sigma_of(v);
  ASSERT_LT(thr, 25.0);
  for (const char* yaml : {"{}", "{clip: 0}"}) {
    const bool clipped = std::string(yaml) == "{}";
    const double s = clipped ? thr : 30.0;
    at::Tensor q = reduce_once(*make_algorithm("terngrad", yaml), v, 0, kOnce);
    at::Tensor mag = q.abs();
    EXPECT_TRUE(((mag == 0) | ((mag - s).abs() <= 1e-5 * s)).all().item<bool>()) << yaml;
    EXPECT_TRUE(((q == 0) | (q.sign() == v.sign())).all().item<bool>()) << yaml;
    EXPECT_GT((mag > 0).sum().item<int64_t>(), 0);
    // Probability |clip(g)|/s = 1 for the largest (and, clipped, every beyond 2.5σ): always ±s.
    EXPECT_NEAR(q[10].item<double>(), s, 1e-5 * s);
    if (clipped) {
      EXPECT_NEAR(q[11].item<double>(), -s, 1e-5 * s);
    }
  }
}

TEST(TernGrad, UnbiasedForTheClippedGradient) {
  const int K = 2000;
  at::Tensor v = torch::randn({300}, make_generator(2, 0, 0));
  v[0] = 12.0f;
  const double thr = 2.5 * sigma_of(v);
  at::Tensor c = v.to(at::kDouble).clamp(-thr, thr);  // the clipped gradient, s = thr
  auto alg = make_algorithm("terngrad");
  at::Tensor sum = torch::zeros({300}, at::kDouble);
  for (int k = 0; k < K; ++k) sum += reduce_once(*alg, v, k, kOnce).to(at::kDouble);
  at::Tensor mean = sum / K;
  at::Tensor var_i = thr * c.abs() - c * c;  // s²·p(1−p) with p = |c|/s
  at::Tensor tol = 5 * (var_i / K).sqrt() + 1e-5 * thr;
  EXPECT_TRUE(((mean - c).abs() <= tol).all().item<bool>())
      << "max excess " << ((mean - c).abs() - tol).max().item<double>();
  const double bias2 = (mean - c).pow(2).sum().item<double>();
  const double expected = var_i.sum().item<double>() / K;
  EXPECT_GT(bias2, 0.7 * expected);
  EXPECT_LT(bias2, 1.3 * expected);
}

// The paper's rule in plain LibTorch: clip at 2.5σ per rank and layer, s = max of the ranks'
// max|clipped| (scaler sharing) or the rank's own, b = (u·s < |clipped|) with the documented
// uniforms (one key per tensor), average over ranks.
std::vector<at::Tensor> reference_terngrad(int P, int64_t t, bool sharing) {
  std::vector<std::vector<at::Tensor>> clipped(P);
  std::vector<std::vector<float>> scale(P);
  for (int r = 0; r < P; ++r)
    for (const auto& g : quantizer_grads(r, t)) {
      const float thr = static_cast<float>(2.5 * sigma_of(g));
      at::Tensor a = g.reshape({-1}).abs().clamp_max(thr);
      clipped[r].push_back(a);
      scale[r].push_back(a.max().item<float>());
    }
  const size_t T = clipped[0].size();
  std::vector<at::Tensor> sum(T);
  for (int r = 0; r < P; ++r) {
    at::Generator gen = make_generator(kTernGradSeed, r, t, kTernGradBucket);
    auto grads = quantizer_grads(r, t);
    for (size_t i = 0; i < T; ++i) {
      float s = scale[r][i];
      if (sharing)
        for (int q = 0; q < P; ++q) s = std::max(s, scale[q][i]);
      at::Tensor u = at::empty({clipped[r][i].numel()});
      CounterUniforms(draw_key(gen)).fill(0, u.numel(), u.data_ptr<float>());
      at::Tensor b = (u * s < clipped[r][i]).to(at::kFloat);
      at::Tensor tern = (b * grads[i].reshape({-1}).sign() * s).view(grads[i].sizes());
      sum[i] = r == 0 ? tern : sum[i] + tern;
    }
  }
  for (auto& x : sum) x = x / P;
  return sum;
}

class TernGradRanks : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(TernGradRanks, OracleAgreementAndExactBytes) {
  const int P = std::get<0>(GetParam());
  const bool sharing = std::get<1>(GetParam());
  auto res = testing::run_steps(P, "terngrad", sharing ? "{}" : "{scaler_sharing: false}", 3,
                                quantizer_grads, decaying_lr_options());
  testing::expect_ranks_agree(res);
  int64_t codes = 0;
  const auto shapes = quantizer_grads(0, 0);
  for (const auto& g : shapes) codes += ceil_div(g.numel(), 4);
  const int64_t T = static_cast<int64_t>(shapes.size());
  for (int64_t t = 0; t < 3; ++t) {
    auto want = reference_terngrad(P, t, sharing);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(torch::allclose(res[0][t].grads[i], want[i], 1e-5, 1e-7))
          << "step " << t << " tensor " << i << " max diff "
          << (res[0][t].grads[i] - want[i]).abs().max().item<double>();
    for (int r = 0; r < P; ++r) {
      const auto& c = res[r][t].comm;
      EXPECT_EQ(c.payload_bytes, 4 * T + codes);
      EXPECT_EQ(c.calls, sharing ? 2 : 1);
      EXPECT_EQ(c.bus_bytes,
                sharing ? allgather_bus_bytes(4 * T * P, P) + allgather_bus_bytes(codes * P, P)
                        : allgather_bus_bytes((4 * T + codes) * P, P));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TernGradRanks,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Bool()));

// One fp32 scaler per tensor and 2 bits per value, each tensor in whole bytes.
TEST(TernGrad, BytesPerStepForResNet20Gradients) {
  const auto shapes = testing::resnet20_shapes();
  int64_t formula = 4 * static_cast<int64_t>(shapes.size());
  for (const auto& s : shapes) formula += ceil_div(c10::multiply_integers(s), 4);
  for (int64_t bytes : testing::resnet20_step_payloads("terngrad", "{}")) EXPECT_EQ(bytes, formula);
}

}  // namespace
}  // namespace cedar
