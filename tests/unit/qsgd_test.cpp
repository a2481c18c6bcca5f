// Bit packing (round trip, exact sizes, documented layout) and QSGD (Alistarh et al. 2017):
// levels and signs of the decoded values, unbiasedness and the paper's variance bound over many
// seeds, a plain-LibTorch oracle on 2 ranks, agreement and exact byte counts on 2 and 4 ranks;
// bytes per step of every quantizer for ResNet-20's gradients.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/algorithm.h"
#include "algorithms/codecs/bit_packing.h"
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

constexpr uint64_t kSeed = 1234;

std::unique_ptr<Algorithm> make(const AlgorithmInfo& info, const std::string& yaml) {
  return info.make(YAML::Load(yaml), Source{}, nullptr);
}
std::unique_ptr<Algorithm> make_qsgd(const std::string& yaml) {
  return make(qsgd_algorithm(), yaml);
}
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }


// Runs one reduce_gradients of `alg` on a single rank (LocalCommunicator) at `step`.
at::Tensor reduce_once(Algorithm& alg, const at::Tensor& v, int64_t step) {
  LocalCommunicator comm;
  GradBucket b = bucket_of_grads({v});
  StepContext ctx;
  ctx.step = step;
  ctx.seed = kSeed;
  ctx.lr = 0.1;
  alg.reduce_gradients(b, comm, ctx);
  return b.entries[0].grad.clone();
}

int64_t qsgd_bytes(int64_t n, int bits, int64_t bucket) {
  return 4 * ((n + bucket - 1) / bucket) + (n * (bits + 1) + 7) / 8;
}

// ---------------------------------------------------------------- bit packing

TEST(BitPacking, RoundTripsEveryWidthWithExactSizes) {
  at::Generator gen = make_generator(7, 0, 0);
  for (int bits = 1; bits <= kMaxPackedBits; ++bits) {
    for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 1001, 4099}) {
      at::Tensor codes = at::randint(0, int64_t{1} << bits, {n}, gen, at::kLong);
      at::Tensor packed = pack_bits(codes, bits);
      ASSERT_EQ(packed.numel(), (n * bits + 7) / 8) << "bits " << bits << " n " << n;
      ASSERT_EQ(packed.scalar_type(), at::kByte);
      at::Tensor back = unpack_bits(packed, n, bits);
      EXPECT_EQ(back.scalar_type(), bits <= 8 ? at::kByte : at::kInt);
      ASSERT_TRUE(torch::equal(back.to(at::kLong), codes)) << "bits " << bits << " n " << n;
      // Any integer input type gives the same bytes.
      at::Tensor as_int = pack_bits(codes.to(at::kInt), bits);
      EXPECT_TRUE(torch::equal(as_int, packed));
    }
  }
  at::Tensor flags = torch::tensor({true, false, true, true, false, false, false, false, true});
  at::Tensor packed = pack_bits(flags, 1);
  ASSERT_EQ(packed.numel(), 2);
  EXPECT_EQ(packed[0].item<int>(), 0b00001101);
  EXPECT_EQ(packed[1].item<int>(), 1);
}

TEST(BitPacking, LittleEndianLayoutAsDocumented) {
  // b = 2, codes {1, 2, 3}: 1 | 2<<2 | 3<<4.
  at::Tensor p2 = pack_bits(torch::tensor({1, 2, 3}, at::kByte), 2);
  ASSERT_EQ(p2.numel(), 1);
  EXPECT_EQ(p2[0].item<int>(), 0b00111001);
  // b = 3, codes {5, 6, 7}: stream bits 0-2 = 5, 3-5 = 6, 6-8 = 7 (crossing into byte 1).
  at::Tensor p3 = pack_bits(torch::tensor({5, 6, 7}, at::kInt), 3);
  ASSERT_EQ(p3.numel(), 2);
  EXPECT_EQ(p3[0].item<int>(), 5 | 6 << 3 | (7 & 3) << 6);
  EXPECT_EQ(p3[1].item<int>(), 7 >> 2);
  // b = 9: code 0x1ff then 0x001: byte0 = 0xff, byte1 = 0x01 | 0x01 << 1, byte2 = 0.
  at::Tensor p9 = pack_bits(torch::tensor({0x1ff, 1}, at::kInt), 9);
  ASSERT_EQ(p9.numel(), 3);
  EXPECT_EQ(p9[0].item<int>(), 0xff);
  EXPECT_EQ(p9[1].item<int>(), 0x03);
  EXPECT_EQ(p9[2].item<int>(), 0);
}

TEST(BitPacking, RejectsBadWidthsCodesAndSizes) {
  at::Tensor codes = torch::tensor({0, 1, 2, 3}, at::kInt);
  EXPECT_THROW(pack_bits(codes, 0), std::invalid_argument);
  EXPECT_THROW(pack_bits(codes, kMaxPackedBits + 1), std::invalid_argument);
  EXPECT_THROW(pack_bits(codes, 1), std::invalid_argument);  // 2 and 3 need 2 bits
  EXPECT_THROW(pack_bits(torch::tensor({1, -1}, at::kInt), 8), std::invalid_argument);
  EXPECT_THROW(pack_bits(torch::ones({3}), 8), std::invalid_argument);  // floats are not codes
  at::Tensor packed = pack_bits(codes, 2);
  EXPECT_THROW(unpack_bits(packed, 5, 2), std::invalid_argument);
  EXPECT_THROW(unpack_bits(packed, 4, 0), std::invalid_argument);
}

// ---------------------------------------------------------------- QSGD

TEST(Qsgd, ParametersAreValidated) {
  EXPECT_THROW(make_qsgd("{bits: 0}"), ConfigError);
  EXPECT_THROW(make_qsgd("{bits: 9}"), ConfigError);
  EXPECT_THROW(make_qsgd("{bucket_size: 0}"), ConfigError);
  EXPECT_THROW(make_qsgd("{norm: l1}"), ConfigError);
  EXPECT_THROW(make_qsgd("{levels: 3}"), ConfigError);
  std::string resolved;
  qsgd_algorithm().make(YAML::Load("{}"), Source{}, &resolved);
  YAML::Node r = YAML::Load(resolved);
  EXPECT_EQ(r["bits"].as<int>(), 4);
  EXPECT_EQ(r["bucket_size"].as<int>(), 512);
  EXPECT_EQ(r["norm"].as<std::string>(), "l2");
}

// Every decoded value is ±‖v‖·level/s of its bucket, level ∈ {⌊s|v_i|/‖v‖⌋, that + 1}, with the
// sign of v_i; buckets of 512 over 1300 elements (two full, one partial).
TEST(Qsgd, DecodedValuesLieOnTheBucketLevelsWithTheRightSigns) {
  at::Tensor v = torch::randn({1300}, make_generator(1, 0, 0));
  v.narrow(0, 100, 5).zero_();
  for (int bits = 1; bits <= 8; ++bits) {
    auto alg = make_qsgd("{bits: " + std::to_string(bits) + "}");
    at::Tensor q = reduce_once(*alg, v, 3);
    const double s = std::pow(2.0, bits) - 1;
    auto va = v.accessor<float, 1>();
    auto qa = q.accessor<float, 1>();
    for (int64_t b = 0; b * 512 < 1300; ++b) {
      const int64_t lo = b * 512, hi = std::min<int64_t>(1300, lo + 512);
      double sq = 0;
      for (int64_t i = lo; i < hi; ++i) sq += double(va[i]) * va[i];
      const double norm = std::sqrt(sq);
      for (int64_t i = lo; i < hi; ++i) {
        const double level = std::fabs(qa[i]) * s / norm;
        ASSERT_NEAR(level, std::round(level), 1e-4) << "bits " << bits << " i " << i;
        const double r = std::fabs(va[i]) * s / norm;  // level must be floor(r) or floor(r) + 1
        ASSERT_GE(std::round(level), std::floor(r - 1e-4)) << "bits " << bits << " i " << i;
        ASSERT_LE(std::round(level), std::floor(r + 1e-4) + 1) << "bits " << bits << " i " << i;
        if (qa[i] != 0) {
          ASSERT_EQ(qa[i] > 0, va[i] > 0) << "i " << i;
        }
        if (va[i] == 0) {
          ASSERT_EQ(qa[i], 0.0f);
        }
      }
    }
  }
}

// Over K = 2000 seeds: (1) per coordinate |mean − v_i| ≤ 5·σ_i/√K with σ_i² = (‖v‖/s)²·p_i(1−p_i)
// the exact Bernoulli variance (p_i the fractional part of s|v_i|/‖v‖), plus 1e-6·‖v‖ of float
// rounding; (2) ‖mean − v‖² within ±30% of its expectation Σσ_i²/K (relative spread ~6%); (3) the
// empirical E‖Q − v‖² within ±5% of Σσ_i² and below the paper's min(n/s², √n/s)·‖v‖².
void check_unbiased_and_variance(int bits, const std::string& norm_kind) {
  const int64_t n = 512;
  const int K = 2000;
  at::Tensor v = torch::randn({n}, make_generator(2, 0, 0)).to(at::kDouble);
  auto alg = make_qsgd("{bits: " + std::to_string(bits) + ", norm: " + norm_kind + "}");
  at::Tensor vf = v.to(at::kFloat);
  at::Tensor sum = torch::zeros({n}, at::kDouble);
  double sq_err = 0;
  for (int k = 0; k < K; ++k) {
    at::Tensor q = reduce_once(*alg, vf, k).to(at::kDouble);
    sum += q;
    sq_err += (q - v).pow(2).sum().item<double>();
  }
  at::Tensor mean = sum / K;
  const double s = std::pow(2.0, bits) - 1;
  const double norm2 = v.pow(2).sum().item<double>();
  const double scale = norm_kind == "max" ? v.abs().max().item<double>() : std::sqrt(norm2);
  at::Tensor r = v.abs() * (s / scale);
  at::Tensor p = r - r.floor();
  at::Tensor var_i = (scale / s) * (scale / s) * p * (1 - p);
  const double var = var_i.sum().item<double>();
  at::Tensor tol = 5 * (var_i / K).sqrt() + 1e-6 * scale;
  EXPECT_TRUE(((mean - v).abs() <= tol).all().item<bool>())
      << "max excess " << ((mean - v).abs() - tol).max().item<double>();
  const double bias2 = (mean - v).pow(2).sum().item<double>();
  EXPECT_GT(bias2, 0.7 * var / K);
  EXPECT_LT(bias2, 1.3 * var / K);
  const double emp_var = sq_err / K;
  EXPECT_NEAR(emp_var, var, 0.05 * var);
  if (norm_kind == "l2") {
    const double bound = std::min(n / (s * s), std::sqrt(double(n)) / s) * norm2;
    EXPECT_LE(emp_var, bound);
    std::printf("QSGD %d-bit, n=%lld: E|Q-v|^2 = %.4g |v|^2 (exact %.4g), bound %.4g |v|^2\n",
                bits, static_cast<long long>(n), emp_var / norm2, var / norm2, bound / norm2);
  }
}

TEST(Qsgd, UnbiasedWithVarianceWithinThePapersBound2Bit) { check_unbiased_and_variance(2, "l2"); }
TEST(Qsgd, UnbiasedWithVarianceWithinThePapersBound8Bit) { check_unbiased_and_variance(8, "l2"); }
TEST(Qsgd, MaxNormIsUnbiased) { check_unbiased_and_variance(3, "max"); }

TEST(Qsgd, ReproducibleFromSeedRankAndStep) {
  auto alg = make_qsgd("{bits: 2}");
  at::Tensor v = torch::randn({700}, make_generator(3, 0, 0));
  EXPECT_TRUE(torch::equal(reduce_once(*alg, v, 5), reduce_once(*alg, v, 5)));
  EXPECT_FALSE(torch::equal(reduce_once(*alg, v, 5), reduce_once(*alg, v, 6)));
}

// ---------------------------------------------------------------- multi-rank

struct StepResult {
  std::vector<at::Tensor> grads;
  CommCounters comm;
};

// Runs `steps` reduce_gradients of one algorithm per rank on P in-process ranks through a
// MeteredCommunicator; grads_of(rank, step) gives the rank's gradients. Returns [rank][step].
std::vector<std::vector<StepResult>> run_steps(
    int P, const AlgorithmInfo& info, const std::string& yaml, int steps,
    const std::function<std::vector<at::Tensor>(int, int64_t)>& grads_of) {
  std::vector<std::unique_ptr<Algorithm>> algs;
  for (int r = 0; r < P; ++r) algs.push_back(make(info, yaml));
  std::vector<std::vector<StepResult>> out(P);
  run_ranks(P, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    for (int64_t t = 0; t < steps; ++t) {
      GradBucket b = bucket_of_grads(grads_of(r, t), /*index=*/2);
      StepContext ctx;
      ctx.step = t;
      ctx.seed = kSeed;
      ctx.lr = 0.1;
      comm.reset_step();
      algs[r]->reduce_gradients(b, comm, ctx);
      StepResult res{{}, comm.step()};
      for (auto& e : b.entries) res.grads.push_back(e.grad.clone());
      out[r].push_back(res);
    }
  });
  return out;
}

std::vector<at::Tensor> rank_grads(int r, int64_t t) {
  at::Generator gen = make_generator(99, r, t, 7);
  return {torch::randn({3, 5, 7}, gen) * (r + 1), torch::randn({1000}, gen),
          torch::randn({13}, gen) * 1e-3};
}

// The paper's quantizer in plain LibTorch, drawing the documented uniforms (one key per tensor).
at::Tensor reference_qsgd(const at::Tensor& g, int bits, int64_t B, at::Generator& gen) {
  at::Tensor v = g.reshape({-1});
  const int64_t n = v.numel();
  at::Tensor u = at::empty({n});
  CounterUniforms(draw_key(gen)).fill(0, n, u.data_ptr<float>());
  const float s = static_cast<float>((1 << bits) - 1);
  at::Tensor out = torch::empty({n});
  auto va = v.accessor<float, 1>();
  for (int64_t lo = 0; lo < n; lo += B) {
    const int64_t len = std::min(B, n - lo);
    double sq = 0;
    for (int64_t i = lo; i < lo + len; ++i) sq += double(va[i]) * va[i];
    const float norm = static_cast<float>(std::sqrt(sq));
    at::Tensor x = v.narrow(0, lo, len);
    at::Tensor a = (x.abs() * (s / norm)).clamp_max(s);
    at::Tensor l = a.floor();
    at::Tensor level = l + (u.narrow(0, lo, len) < a - l).to(at::kFloat);
    out.narrow(0, lo, len).copy_(level * (norm / s) * x.sign());
  }
  return out.view(g.sizes());
}

TEST(Qsgd, OracleMatchesAPlainLibTorchReferenceOnTwoRanks) {
  const int P = 2, bits = 3;
  const int64_t B = 64;
  auto results = run_steps(P, qsgd_algorithm(), "{bits: 3, bucket_size: 64}", 3, rank_grads);
  for (int64_t t = 0; t < 3; ++t) {
    std::vector<at::Tensor> expected;
    for (int r = 0; r < P; ++r) {
      at::Generator gen = make_generator(kSeed, r, t, /*stream=bucket index*/ 2);
      auto grads = rank_grads(r, t);
      for (size_t i = 0; i < grads.size(); ++i) {
        at::Tensor q = reference_qsgd(grads[i], bits, B, gen);
        if (r == 0) expected.push_back(q);
        else expected[i] = expected[i] + q;
      }
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      at::Tensor want = expected[i] / P;
      for (int r = 0; r < P; ++r)
        EXPECT_TRUE(torch::allclose(results[r][t].grads[i], want, 1e-6, 1e-9))
            << "step " << t << " tensor " << i << " rank " << r << " max diff "
            << (results[r][t].grads[i] - want).abs().max().item<double>();
    }
  }
}

class QsgdRanks : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(QsgdRanks, AllRanksAgreeAndBytesEqualTheFormula) {
  const int P = std::get<0>(GetParam()), bits = std::get<1>(GetParam());
  auto results = run_steps(P, qsgd_algorithm(), "{bits: " + std::to_string(bits) + "}", 2,
                       rank_grads);
  int64_t formula = 0;
  for (const auto& g : rank_grads(0, 0)) formula += qsgd_bytes(g.numel(), bits, 512);
  for (int r = 0; r < P; ++r) {
    for (int64_t t = 0; t < 2; ++t) {
      const auto& res = results[r][t];
      EXPECT_EQ(res.comm.calls, 1);
      EXPECT_EQ(res.comm.payload_bytes, formula);
      EXPECT_EQ(res.comm.bus_bytes, allgather_bus_bytes(formula * P, P));
      for (size_t i = 0; i < res.grads.size(); ++i)
        EXPECT_TRUE(torch::equal(res.grads[i], results[0][t].grads[i])) << "rank " << r;
    }
  }
  // 5 bits + 4/512 bytes of norm per element for 4-bit QSGD: about 6.4x less than fp32.
  if (bits == 4) {
    EXPECT_LT(formula * 6, 4 * (105 + 1000 + 13));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, QsgdRanks,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Values(4, 8)));

// ---------------------------------------------------------------- bytes for ResNet-20

std::vector<std::vector<int64_t>> resnet20_shapes() {
  std::vector<std::vector<int64_t>> s = {{16, 3, 3, 3}, {16}, {16}};
  int64_t in = 16;
  for (int64_t width : {16, 32, 64})
    for (int block = 0; block < 3; ++block) {
      s.push_back({width, in, 3, 3});
      s.push_back({width});
      s.push_back({width});
      s.push_back({width, width, 3, 3});
      s.push_back({width});
      s.push_back({width});
      in = width;
    }
  s.push_back({10, 64});
  s.push_back({10});
  return s;
}

TEST(QuantizerBytes, ResNet20GradientPerStep) {
  auto shapes = resnet20_shapes();
  int64_t total = 0, T = static_cast<int64_t>(shapes.size());
  for (const auto& s : shapes) total += c10::multiply_integers(s);
  ASSERT_EQ(total, 269722);
  auto grads_of = [&](int r, int64_t t) {
    std::vector<at::Tensor> g;
    at::Generator gen = make_generator(11, r, t);
    for (const auto& s : shapes) g.push_back(torch::randn(s, gen));
    return g;
  };
  auto sum_over = [&](const std::function<int64_t(int64_t)>& per_tensor) {
    int64_t b = 0;
    for (const auto& s : shapes) b += per_tensor(c10::multiply_integers(s));
    return b;
  };
  struct Case {
    AlgorithmInfo info;
    std::string yaml;
    int64_t formula;
  };
  auto qsgd_bits = [&](int bits) {
    return sum_over([bits](int64_t n) { return 4 * ceil_div(n, 512) + ceil_div((bits + 1) * n, 8); });
  };
  const std::vector<Case> cases = {
      {qsgd_algorithm(), "{}", qsgd_bits(4)},
      {qsgd_algorithm(), "{bits: 8}", qsgd_bits(8)},
      {terngrad_algorithm(), "{}", 4 * T + sum_over([](int64_t n) { return ceil_div(n, 4); })},
      {signsgd_algorithm(), "{}", sum_over([](int64_t n) { return ceil_div(n, 8); })},
      {ef_signsgd_algorithm(), "{}", sum_over([](int64_t n) { return 4 + ceil_div(n, 8); })},
      {fp16_algorithm(), "{}", 2 * total},
  };
  const double dense = 4.0 * total;
  for (const auto& c : cases) {
    auto res = run_steps(2, c.info, c.yaml, 1, grads_of);
    EXPECT_EQ(res[0][0].comm.payload_bytes, c.formula) << c.info.name << " " << c.yaml;
    EXPECT_EQ(res[1][0].comm.payload_bytes, c.formula) << c.info.name << " " << c.yaml;
    // Encode + decode time of one step on one rank (informative, not asserted).
    auto alg = make(c.info, c.yaml);
    LocalCommunicator local;
    GradBucket bucket = bucket_of_grads(grads_of(0, 0));
    StepContext ctx;
    ctx.lr = 0.1;
    const int reps = 5;
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < reps; ++k) {
      ctx.step = k;
      alg->reduce_gradients(bucket, local, ctx);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        reps;
    std::printf("%-10s %-10s %7lld bytes/rank/step = %.4f of dense fp32 (%.2fx less), %lld "
                "tensors; encode+decode %.2f ms/step on 1 rank\n",
                c.info.name.c_str(), c.yaml.c_str(), static_cast<long long>(c.formula),
                c.formula / dense, dense / c.formula, static_cast<long long>(T), ms);
  }
}

}  // namespace
}  // namespace cedar
