// QSGD (Alistarh et al. 2017): levels and signs of the decoded values, unbiasedness and the
// paper's variance bound over many seeds, a plain-LibTorch oracle on 2 ranks, agreement and exact
// byte counts on 2 and 4 ranks and for ResNet-20's gradients; and its codec: the chunked encoder
// and decoder produce the documented format (fp32 norms, then the (bits + 1)-bit codes of
// bit_packing.h) across chunk, bucket and byte boundaries with the documented uniforms
// (counter_rng.h).
#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/counter_rng.h"
#include "comm/bus_bytes.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::ceil_div;
using testing::same_bits;
using testing::StepOptions;

constexpr uint64_t kQsgdSeed = 1234;
constexpr int64_t kQsgdBucket = 2;  // of the multi-rank steps

std::unique_ptr<Algorithm> make_qsgd(const std::string& yaml) {
  return testing::make_algorithm("qsgd", yaml);
}

// One reduce_gradients of `alg` on a single rank at `step` (bucket 0, lr 0.1).
at::Tensor reduce_once(Algorithm& alg, const at::Tensor& v, int64_t step) {
  return testing::reduce_once(alg, v, step, StepOptions{kQsgdSeed});
}

int64_t qsgd_bytes(int64_t n, int bits, int64_t bucket) {
  return 4 * ((n + bucket - 1) / bucket) + (n * (bits + 1) + 7) / 8;
}

// ---------------------------------------------------------------- QSGD

TEST(Qsgd, ParametersAreValidated) {
  EXPECT_THROW(make_qsgd("{bits: 0}"), ConfigError);
  EXPECT_THROW(make_qsgd("{bits: 9}"), ConfigError);
  EXPECT_THROW(make_qsgd("{bucket_size: 0}"), ConfigError);
  EXPECT_THROW(make_qsgd("{norm: l1}"), ConfigError);
  EXPECT_THROW(make_qsgd("{levels: 3}"), ConfigError);
  YAML::Node r = testing::resolved_params("qsgd");
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
    std::printf("QSGD %d-bit, n=%lld: E|Q-v|^2 = %.4g |v|^2 (exact %.4g), bound %.4g |v|^2\n", bits,
                static_cast<long long>(n), emp_var / norm2, var / norm2, bound / norm2);
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

// `steps` steps of QSGD with `yaml` on P in-process ranks (bucket 2, lr 0.1): [rank][step].
std::vector<std::vector<testing::StepResult>> run_steps(int P, const std::string& yaml, int steps,
                                                        const testing::GradsOf& grads_of) {
  return testing::run_steps(P, "qsgd", yaml, steps, grads_of, StepOptions{kQsgdSeed, kQsgdBucket});
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
  auto results = run_steps(P, "{bits: 3, bucket_size: 64}", 3, rank_grads);
  for (int64_t t = 0; t < 3; ++t) {
    std::vector<at::Tensor> expected;
    for (int r = 0; r < P; ++r) {
      at::Generator gen = make_generator(kQsgdSeed, r, t, /*stream=*/kQsgdBucket);
      auto grads = rank_grads(r, t);
      for (size_t i = 0; i < grads.size(); ++i) {
        at::Tensor q = reference_qsgd(grads[i], bits, B, gen);
        if (r == 0)
          expected.push_back(q);
        else
          expected[i] = expected[i] + q;
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
  auto results = run_steps(P, "{bits: " + std::to_string(bits) + "}", 2, rank_grads);
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

// (bits + 1) bits per value per tensor in whole bytes, and one fp32 norm per bucket of 512 values
// of a tensor, for 4 (the default) and 8 bits.
TEST(Qsgd, BytesPerStepForResNet20Gradients) {
  const auto shapes = testing::resnet20_shapes();
  int64_t total = 0;
  for (const auto& s : shapes) total += c10::multiply_integers(s);
  ASSERT_EQ(total, 269722);
  for (int bits : {4, 8}) {
    int64_t formula = 0;
    for (const auto& s : shapes) formula += qsgd_bytes(c10::multiply_integers(s), bits, 512);
    const std::string yaml = bits == 4 ? "{}" : "{bits: 8}";
    for (int64_t bytes : testing::resnet20_step_payloads("qsgd", yaml))
      EXPECT_EQ(bytes, formula) << yaml;
  }
}

// ---------------------------------------------------------------- the codec

// QSGD's encoding written out plainly from its documented rule (algorithms/qsgd.cpp).
at::Tensor qsgd_reference(const at::Tensor& x, int bits, int64_t bucket, at::Generator& gen) {
  const int64_t n = x.numel(), m = (n + bucket - 1) / bucket;
  const float s = static_cast<float>((1u << bits) - 1);
  std::vector<float> u(static_cast<size_t>(n));
  CounterUniforms(draw_key(gen)).fill(0, n, u.data());
  const float* xp = x.data_ptr<float>();
  const float* up = u.data();
  std::vector<float> norms(m);
  at::Tensor codes = at::empty({n}, at::kInt);
  int32_t* cp = codes.data_ptr<int32_t>();
  for (int64_t b = 0; b < m; ++b) {
    const int64_t lo = b * bucket, hi = std::min(n, lo + bucket);
    // Eight partial sums, element i of the bucket into sum i mod 8, added pairwise.
    double sq[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = lo; i < hi; ++i) sq[(i - lo) % 8] += static_cast<double>(xp[i]) * xp[i];
    norms[b] = static_cast<float>(
        std::sqrt(((sq[0] + sq[1]) + (sq[2] + sq[3])) + ((sq[4] + sq[5]) + (sq[6] + sq[7]))));
    for (int64_t i = lo; i < hi; ++i) {
      float a = std::fabs(xp[i]) * (norms[b] > 0 ? s / norms[b] : 0.0f);
      if (!(a <= s)) a = s;
      const float l = std::floor(a);
      const int level = static_cast<int>(l) + (up[i] < a - l ? 1 : 0);
      cp[i] = level | (level && xp[i] < 0 ? 1 << bits : 0);
    }
  }
  at::Tensor head = at::from_blob(norms.data(), {m}, at::kFloat).clone();
  return at::cat({as_bytes(head), pack_bits(codes, bits + 1)});
}

TEST(QsgdCodec, ChunkedEncoderWritesTheDocumentedFormat) {
  for (int bits : {1, 2, 3, 4, 5, 6, 7, 8})
    for (int64_t bucket : {1, 7, 512, 5000})
      for (int64_t n : {1, 13, 4096, 4099, 9001}) {
        at::Tensor x = at::randn({n}, make_generator(n + bits, 1, 0));
        if (n > 10) {
          x[3] = 0.0f;
          x[5] = -0.0f;
        }
        auto codec = make_qsgd_compressor(bits, bucket, false);
        at::Generator g1 = make_generator(9, 0, bucket), g2 = make_generator(9, 0, bucket);
        at::Tensor payload = codec->compress(x, g1);
        ASSERT_TRUE(same_bits(payload, qsgd_reference(x, bits, bucket, g2)))
            << bits << " bits, buckets of " << bucket << ", " << n << " elements";
        // Decoding: level * norm / s with the code's sign, per bucket.
        const int64_t head_bytes = 4 * ((n + bucket - 1) / bucket);
        at::Tensor head = from_bytes(payload.narrow(0, 0, head_bytes), at::kFloat);
        at::Tensor codes =
            unpack_bits(payload.narrow(0, head_bytes, payload.numel() - head_bytes), n, bits + 1)
                .to(at::kInt);
        at::Tensor decoded = codec->decompress(payload, n);
        const float s = static_cast<float>((1u << bits) - 1);
        for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 97)) {
          const int c = codes[i].item<int>();
          const float unit = head[i / bucket].item<float>() / s;
          const float value = static_cast<float>(c & ((1 << bits) - 1)) * unit;
          ASSERT_EQ(decoded[i].item<float>(), (c >> bits) ? -value : value) << i;
        }
      }
}

}  // namespace
}  // namespace cedar
