// TernGrad, signSGD / Signum with majority vote, EF-signSGD and fp16: each algorithm's defining
// property, a plain-LibTorch oracle of the paper's rule over several steps on several ranks, rank
// agreement and exact metered byte counts (bytes for ResNet-20's gradients: qsgd_test.cpp).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/algorithm.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/counter_rng.h"
#include "comm/bus_bytes.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/bucket_fixtures.h"

namespace cedar {
AlgorithmInfo fp16_algorithm();

namespace {

using ::cedar::testing::bucket_of_grads;

constexpr uint64_t kSeed = 77;
constexpr int64_t kBucketIndex = 1;

std::unique_ptr<Algorithm> make(const AlgorithmInfo& info, const std::string& yaml) {
  return info.make(YAML::Load(yaml), Source{}, nullptr);
}


struct StepResult {
  std::vector<at::Tensor> grads;
  CommCounters comm;
};
using GradsOf = std::function<std::vector<at::Tensor>(int rank, int64_t step)>;

double lr_of(int64_t t) { return 0.1 / (1 + t); }

// `steps` reduce_gradients per rank on P in-process ranks through a MeteredCommunicator.
// Returns [rank][step].
std::vector<std::vector<StepResult>> run_steps(int P, const AlgorithmInfo& info,
                                               const std::string& yaml, int steps,
                                               const GradsOf& grads_of) {
  std::vector<std::unique_ptr<Algorithm>> algs;
  for (int r = 0; r < P; ++r) algs.push_back(make(info, yaml));
  std::vector<std::vector<StepResult>> out(P);
  run_ranks(P, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    for (int64_t t = 0; t < steps; ++t) {
      GradBucket b = bucket_of_grads(grads_of(r, t), kBucketIndex);
      StepContext ctx;
      ctx.step = t;
      ctx.seed = kSeed;
      ctx.lr = lr_of(t);
      comm.reset_step();
      algs[r]->reduce_gradients(b, comm, ctx);
      StepResult res{{}, comm.step()};
      for (auto& e : b.entries) res.grads.push_back(e.grad.clone());
      out[r].push_back(res);
    }
  });
  return out;
}

at::Tensor reduce_once(Algorithm& alg, const at::Tensor& v, int64_t step, double lr = 0.1) {
  LocalCommunicator comm;
  GradBucket b = bucket_of_grads({v}, kBucketIndex);
  StepContext ctx;
  ctx.step = step;
  ctx.seed = kSeed;
  ctx.lr = lr;
  alg.reduce_gradients(b, comm, ctx);
  return b.entries[0].grad.clone();
}

std::vector<at::Tensor> rank_grads(int r, int64_t t) {
  at::Generator gen = make_generator(5, r, t, 3);
  at::Tensor a = torch::randn({4, 3, 3, 3}, gen) * (r + 1);
  a.view({-1})[7] = 40.0f * (r + 1);  // an outlier beyond 2.5 sigma
  return {a, torch::randn({257}, gen), torch::randn({10}, gen) * 1e-2};
}

// All ranks hold bitwise identical results at every step.
void expect_ranks_agree(const std::vector<std::vector<StepResult>>& res) {
  for (size_t r = 1; r < res.size(); ++r)
    for (size_t t = 0; t < res[r].size(); ++t)
      for (size_t i = 0; i < res[r][t].grads.size(); ++i)
        EXPECT_TRUE(torch::equal(res[r][t].grads[i], res[0][t].grads[i]))
            << "rank " << r << " step " << t << " tensor " << i;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------- TernGrad

TEST(TernGrad, ParametersAreValidated) {
  EXPECT_THROW(make(terngrad_algorithm(), "{clip: -1}"), ConfigError);
  EXPECT_THROW(make(terngrad_algorithm(), "{bits: 2}"), ConfigError);
  std::string resolved;
  terngrad_algorithm().make(YAML::Load("{}"), Source{}, &resolved);
  EXPECT_DOUBLE_EQ(YAML::Load(resolved)["clip"].as<double>(), 2.5);
  EXPECT_TRUE(YAML::Load(resolved)["scaler_sharing"].as<bool>());
  EXPECT_FALSE(make(terngrad_algorithm(), "{}")->applies_momentum());
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
    at::Tensor q = reduce_once(*make(terngrad_algorithm(), yaml), v, 0);
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
  auto alg = make(terngrad_algorithm(), "{}");
  at::Tensor sum = torch::zeros({300}, at::kDouble);
  for (int k = 0; k < K; ++k) sum += reduce_once(*alg, v, k).to(at::kDouble);
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
    for (const auto& g : rank_grads(r, t)) {
      const float thr = static_cast<float>(2.5 * sigma_of(g));
      at::Tensor a = g.reshape({-1}).abs().clamp_max(thr);
      clipped[r].push_back(a);
      scale[r].push_back(a.max().item<float>());
    }
  const size_t T = clipped[0].size();
  std::vector<at::Tensor> sum(T);
  for (int r = 0; r < P; ++r) {
    at::Generator gen = make_generator(kSeed, r, t, kBucketIndex);
    auto grads = rank_grads(r, t);
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
  auto res = run_steps(P, terngrad_algorithm(), sharing ? "{}" : "{scaler_sharing: false}", 3,
                       rank_grads);
  expect_ranks_agree(res);
  int64_t codes = 0;
  const auto shapes = rank_grads(0, 0);
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
      EXPECT_EQ(c.bus_bytes, sharing ? allgather_bus_bytes(4 * T * P, P) +
                                           allgather_bus_bytes(codes * P, P)
                                     : allgather_bus_bytes((4 * T + codes) * P, P));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TernGradRanks,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Bool()));

// ---------------------------------------------------------------- signSGD / Signum

TEST(SignSgd, ParametersAndMomentumOwnership) {
  EXPECT_THROW(make(signsgd_algorithm(), "{momentum: 1}"), ConfigError);
  EXPECT_THROW(make(signsgd_algorithm(), "{momentum: -0.1}"), ConfigError);
  std::string resolved;
  signsgd_algorithm().make(YAML::Load("{}"), Source{}, &resolved);
  EXPECT_DOUBLE_EQ(YAML::Load(resolved)["momentum"].as<double>(), 0.9);
  EXPECT_TRUE(make(signsgd_algorithm(), "{}")->applies_momentum());
  EXPECT_TRUE(make(signsgd_algorithm(), "{momentum: 0}")->applies_momentum());
}

TEST(SignSgd, MajorityVoteOnThreeRanksEqualsTheHandComputedVote) {
  // Columns: the three ranks' signs (0 counts as +) and the vote.
  const std::vector<std::vector<float>> g = {
      {1, -2, 3, -4, 0.5, -0.5, 0, 2, -1e-8f},
      {1, 2, -3, -4, 0.5, 0.5, 0, -2, -3},
      {-1, 2, 3, 4, -0.5, 0.5, -1, -2, 7}};
  const std::vector<float> vote = {1, 1, 1, -1, 1, 1, 1, -1, -1};
  auto res = run_steps(3, signsgd_algorithm(), "{momentum: 0}", 1, [&](int r, int64_t) {
    return std::vector<at::Tensor>{torch::tensor(g[r]), torch::tensor(g[r]).flip(0) * 3};
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(torch::equal(res[r][0].grads[0], torch::tensor(vote))) << res[r][0].grads[0];
    EXPECT_TRUE(torch::equal(res[r][0].grads[1], torch::tensor(vote).flip(0)));
    EXPECT_EQ(res[r][0].comm.payload_bytes, 2 + 2);  // ⌈9/8⌉ bytes per tensor
    EXPECT_EQ(res[r][0].comm.bus_bytes, allgather_bus_bytes(4 * 3, 3));
  }
}

TEST(SignSgd, TiesOfTheVoteGiveZero) {
  auto res = run_steps(2, signsgd_algorithm(), "{momentum: 0}", 1, [](int r, int64_t) {
    return std::vector<at::Tensor>{r == 0 ? torch::tensor({1.0f, -1.0f, 2.0f})
                                          : torch::tensor({-1.0f, -1.0f, 3.0f})};
  });
  EXPECT_TRUE(torch::equal(res[0][0].grads[0], torch::tensor({0.0f, -1.0f, 1.0f})));
}

class SignumRanks : public ::testing::TestWithParam<int> {};

// Signum (β = 0.9) over 5 steps against the paper's Algorithm 1 in plain LibTorch.
TEST_P(SignumRanks, OracleAgreementAndExactBytes) {
  const int P = GetParam();
  const int steps = 5;
  auto res = run_steps(P, signsgd_algorithm(), "{}", steps, rank_grads);
  expect_ranks_agree(res);
  std::vector<std::vector<at::Tensor>> v(P);
  int64_t bytes = 0;
  for (const auto& g : rank_grads(0, 0)) bytes += ceil_div(g.numel(), 8);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<at::Tensor> votes;
    for (int r = 0; r < P; ++r) {
      auto g = rank_grads(r, t);
      if (v[r].empty())
        for (auto& x : g) v[r].push_back(torch::zeros_like(x));
      for (size_t i = 0; i < g.size(); ++i) {
        v[r][i].mul_(0.9).add_(g[i], 1 - 0.9);
        at::Tensor s = torch::where(v[r][i] >= 0, torch::ones_like(g[i]), -torch::ones_like(g[i]));
        if (r == 0) votes.push_back(s);
        else votes[i] = votes[i] + s;
      }
    }
    for (size_t i = 0; i < votes.size(); ++i)
      EXPECT_TRUE(torch::equal(res[0][t].grads[i], votes[i].sign())) << "step " << t;
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(res[r][t].comm.payload_bytes, bytes);
      EXPECT_EQ(res[r][t].comm.bus_bytes, allgather_bus_bytes(bytes * P, P));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, SignumRanks, ::testing::Values(2, 3, 4));

// ---------------------------------------------------------------- EF-signSGD

TEST(EfSignSgd, ScaleIsMeanAbsoluteValueAndMemoryIsTheExactResidual) {
  auto alg = make(ef_signsgd_algorithm(), "{}");
  EXPECT_TRUE(alg->applies_momentum());
  at::Tensor g = torch::randn({101}, make_generator(4, 0, 0));
  const double eta = 0.05;
  // Step 0: p = η·g, Δ = (‖p‖₁/d)·sign(p); the update written is Δ/η.
  at::Tensor p = g * static_cast<float>(eta);
  at::Tensor delta = reduce_once(*alg, g, 0, eta) * static_cast<float>(eta);
  const double scale = p.abs().sum().item<double>() / 101;
  EXPECT_TRUE(torch::allclose(delta.abs(), torch::full({101}, scale), 1e-5, 0));
  EXPECT_TRUE(torch::equal(delta > 0, p >= 0));
  // Step 1 with g = 0: p = e = p0 − Δ0, so this step's Δ exposes the memory exactly.
  at::Tensor e = p - (p >= 0).to(at::kFloat).mul(2).sub(1).mul(static_cast<float>(scale));
  at::Tensor delta1 = reduce_once(*alg, torch::zeros({101}), 1, eta) * static_cast<float>(eta);
  const double scale1 = e.abs().sum().item<double>() / 101;
  EXPECT_TRUE(torch::allclose(delta1.abs(), torch::full({101}, scale1), 1e-5, 0));
  EXPECT_TRUE(torch::equal(delta1 > 0, e >= 0));
  EXPECT_THROW(reduce_once(*alg, g, 2, 0.0), std::invalid_argument);
}

class EfSignSgdRanks : public ::testing::TestWithParam<int> {};

// Algorithm 1 of the paper per rank in plain LibTorch over 5 steps with a decaying lr; the
// update written is mean(Δ)/η.
TEST_P(EfSignSgdRanks, OracleAgreementAndExactBytes) {
  const int P = GetParam();
  const int steps = 5;
  auto res = run_steps(P, ef_signsgd_algorithm(), "{}", steps, rank_grads);
  expect_ranks_agree(res);
  std::vector<std::vector<at::Tensor>> e(P);
  int64_t bytes = 0;
  for (const auto& g : rank_grads(0, 0)) bytes += 4 + ceil_div(g.numel(), 8);
  for (int64_t t = 0; t < steps; ++t) {
    const float eta = static_cast<float>(lr_of(t));
    std::vector<at::Tensor> sum;
    for (int r = 0; r < P; ++r) {
      auto g = rank_grads(r, t);
      if (e[r].empty())
        for (auto& x : g) e[r].push_back(torch::zeros_like(x));
      for (size_t i = 0; i < g.size(); ++i) {
        at::Tensor p = eta * g[i] + e[r][i];
        const float scale = static_cast<float>(p.abs().to(at::kDouble).sum().item<double>() /
                                               double(p.numel()));
        at::Tensor delta =
            torch::where(p >= 0, torch::full_like(p, scale), torch::full_like(p, -scale));
        e[r][i] = p - delta;
        if (r == 0) sum.push_back(delta);
        else sum[i] = sum[i] + delta;
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

INSTANTIATE_TEST_SUITE_P(Ranks, EfSignSgdRanks, ::testing::Values(2, 4));

// ---------------------------------------------------------------- fp16

class Fp16Ranks : public ::testing::TestWithParam<int> {};

TEST_P(Fp16Ranks, AverageOfTheHalvesAndTwoBytesPerElement) {
  const int P = GetParam();
  auto res = run_steps(P, fp16_algorithm(), "{}", 2, rank_grads);
  expect_ranks_agree(res);
  int64_t n = 0;
  for (const auto& g : rank_grads(0, 0)) n += g.numel();
  for (int64_t t = 0; t < 2; ++t) {
    for (size_t i = 0; i < res[0][t].grads.size(); ++i) {
      at::Tensor sum = rank_grads(0, t)[i].to(at::kHalf).to(at::kFloat);
      for (int r = 1; r < P; ++r) sum.add_(rank_grads(r, t)[i].to(at::kHalf).to(at::kFloat));
      at::Tensor want = sum.div_(P);
      EXPECT_TRUE(torch::equal(res[0][t].grads[i], want)) << "step " << t << " tensor " << i;
    }
    EXPECT_EQ(res[0][t].comm.payload_bytes, 2 * n);
    EXPECT_EQ(res[0][t].comm.bus_bytes, allgather_bus_bytes(2 * n * P, P));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Fp16Ranks, ::testing::Values(2, 4));

TEST(Fp16, HalfPrecisionRangeAndRounding) {
  at::Tensor q = reduce_once(*make(fp16_algorithm(), "{}"),
                             torch::tensor({1.0f, 1.0f + 1e-4f, 70000.0f, 1e-8f}), 0);
  EXPECT_EQ(q[0].item<float>(), 1.0f);
  EXPECT_EQ(q[1].item<float>(), 1.0f);  // the nearest half to 1.0001 is 1 (spacing 2^-10)
  EXPECT_TRUE(std::isinf(q[2].item<float>()));
  EXPECT_EQ(q[3].item<float>(), 0.0f);
}

}  // namespace
}  // namespace cedar
