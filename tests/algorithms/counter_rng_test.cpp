// The counter-based uniforms of the stochastic quantizers (algorithms/codecs/counter_rng.h): the
// values are a pure function of (key, index), both paths (AES instructions, portable round) agree
// bit for bit, and a million draws look uniform and independent (mean, variance, bucket and pair
// chi-square, lag-1 correlation; the bounds are about six standard deviations wide and the draws
// fixed, so the outcome is deterministic); the 32-bit words behind them are the uniforms' bits.
#include "algorithms/codecs/counter_rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace cedar {
namespace {

std::vector<float> draws(uint64_t key, uint64_t first, int64_t n) {
  std::vector<float> u(static_cast<size_t>(n));
  CounterUniforms(key).fill(first, n, u.data());
  return u;
}

TEST(CounterUniforms, SameKeySameStreamAndAnyRangeIsASliceOfIt) {
  const std::vector<float> all = draws(42, 0, 10000);
  EXPECT_EQ(all, draws(42, 0, 10000));
  // Ranges that start and end inside, on and across the blocks of four.
  for (uint64_t first : {0u, 1u, 2u, 3u, 4u, 5u, 4093u, 4096u})
    for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 1001}) {
      const std::vector<float> part = draws(42, first, n);
      const std::vector<float> slice(all.begin() + first, all.begin() + first + n);
      ASSERT_EQ(part, slice) << "first " << first << ", " << n << " values";
    }
}

TEST(CounterUniforms, DifferentKeysGiveUnrelatedStreams) {
  const int64_t n = 100000;
  const std::vector<float> a = draws(7, 0, n), b = draws(8, 0, n), c = draws(7ull << 32, 0, n);
  for (const auto* other : {&b, &c}) {
    int64_t equal = 0;
    double cov = 0;
    for (int64_t i = 0; i < n; ++i) {
      equal += a[i] == (*other)[i];
      cov += (a[i] - 0.5) * ((*other)[i] - 0.5);
    }
    // 24-bit values: about n / 2^24 ~ 0.006 coincidences expected.
    EXPECT_LE(equal, 3);
    // Correlation of independent uniforms: standard deviation 1/sqrt(n).
    EXPECT_LT(std::fabs(cov / n * 12), 6 / std::sqrt(double(n)));
  }
  // Far-apart indices of one key do not repeat the stream either.
  EXPECT_NE(draws(7, 0, 64), draws(7, uint64_t{1} << 40, 64));
}

TEST(CounterUniforms, PortablePathEqualsTheHardwarePath) {
  if (!CounterUniforms::hardware_aes()) GTEST_SKIP() << "no AES instructions on this CPU";
  for (uint64_t key : {uint64_t{0}, uint64_t{1}, uint64_t{0xdeadbeefcafef00d}})
    for (uint64_t first : {uint64_t{0}, uint64_t{3}, (uint64_t{1} << 62) + 1}) {
      const int64_t n = 1027;
      std::vector<float> fast(n), slow(n);
      CounterUniforms g(key);
      g.fill(first, n, fast.data());
      g.fill_portable(first, n, slow.data());
      ASSERT_EQ(fast, slow) << "key " << key << ", first " << first;
    }
}

// The words (random-k's integers) are what the uniforms are made of: u = (w >> 8)·2^-24, by either
// path, over ranges that start and end inside blocks of four.
TEST(CounterUniforms, WordsAreTheBitsOfTheUniforms) {
  for (uint64_t key : {uint64_t{5}, uint64_t{0xdeadbeefcafef00d}})
    for (uint64_t first : {uint64_t{0}, uint64_t{1}, uint64_t{6}})
      for (int64_t n : {1, 3, 4, 1029}) {
        const CounterUniforms g(key);
        std::vector<uint32_t> w(static_cast<size_t>(n)), portable(static_cast<size_t>(n));
        g.words(first, n, w.data());
        g.words_portable(first, n, portable.data());
        ASSERT_EQ(w, portable) << "key " << key << ", first " << first << ", " << n;
        const std::vector<float> u = draws(key, first, n);
        for (size_t i = 0; i < w.size(); ++i)
          ASSERT_EQ(u[i], static_cast<float>(w[i] >> 8) / 16777216.0f) << i;
      }
}

TEST(CounterUniforms, MillionDrawsAreUniformAndIndependent) {
  const int64_t n = 1 << 20;
  const std::vector<float> u = draws(2024, 0, n);
  double sum = 0, sq = 0, lag = 0;
  std::vector<int64_t> bucket(256, 0), pair(256, 0);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_GE(u[i], 0.0f);
    ASSERT_LT(u[i], 1.0f);
    ASSERT_EQ(std::ldexp(u[i], 24), std::floor(std::ldexp(u[i], 24)));  // a multiple of 2^-24
    sum += u[i];
    sq += (u[i] - 0.5) * (u[i] - 0.5);
    bucket[static_cast<int>(u[i] * 256)]++;
    if (i + 1 < n) lag += (u[i] - 0.5) * (u[i + 1] - 0.5);
    if (i % 2 == 1) pair[static_cast<int>(u[i - 1] * 16) * 16 + static_cast<int>(u[i] * 16)]++;
  }
  // Mean 1/2 (sd sqrt(1/12n) = 2.8e-4), variance 1/12 (sd sqrt(1/180n) = 7.3e-5).
  EXPECT_NEAR(sum / n, 0.5, 6 * std::sqrt(1.0 / (12.0 * n)));
  EXPECT_NEAR(sq / n, 1.0 / 12, 6 * std::sqrt(1.0 / (180.0 * n)));
  // Lag-1 correlation: sd 1/sqrt(n).
  EXPECT_LT(std::fabs(lag / (n - 1) * 12), 6 / std::sqrt(double(n)));
  // Chi-square with 255 degrees of freedom (mean 255, sd 22.6), for single values in 256
  // buckets and for consecutive pairs in 16 x 16 cells.
  auto chi2 = [](const std::vector<int64_t>& counts, double total) {
    const double e = total / counts.size();
    double c = 0;
    for (int64_t k : counts) c += (k - e) * (k - e) / e;
    return c;
  };
  const double single = chi2(bucket, double(n)), pairs = chi2(pair, double(n / 2));
  EXPECT_GT(single, 255 - 6 * 22.6);
  EXPECT_LT(single, 255 + 6 * 22.6);
  EXPECT_GT(pairs, 255 - 6 * 22.6);
  EXPECT_LT(pairs, 255 + 6 * 22.6);
}

// Stochastic rounding with these uniforms: P(u < p) = p for probabilities on and off the 2^-24
// grid, counted over a million draws (binomial sd sqrt(p(1-p)/n)).
TEST(CounterUniforms, ThresholdFrequenciesMatchTheProbabilities) {
  const int64_t n = 1 << 20;
  const std::vector<float> u = draws(99, 0, n);
  for (float p : {0.001f, 0.1f, 0.25f, 0.3333333f, 0.5f, 0.9f, 0.999f}) {
    int64_t below = 0;
    for (float v : u) below += v < p;
    EXPECT_NEAR(double(below) / n, p, 6 * std::sqrt(p * (1 - p) / n)) << "p = " << p;
  }
}

}  // namespace
}  // namespace cedar
