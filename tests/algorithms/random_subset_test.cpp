// Random-k's index sampler (algorithms/codecs/random_subset.h): k distinct indices, ascending, a
// pure function of the key, and uniform without replacement. The uniformity tests are χ² tests
// over many draws with fixed keys, so their outcome is deterministic; each bound is the χ²
// quantile at p = 10^-6 (a correct sampler fails it for one key set in a million), and each test
// shows a deliberately biased sampler failing the same bound by far:
//   integers  below(3·2^30) over (value mod 3, value / 2^30): the modulo reduction w mod r and the
//             multiply-shift without rejection are biased there, Lemire's method is not;
//   positions each index of [0, n) as often as every other (2 ranges, one binned), against
//             Floyd's algorithm driven by 16-bit modulo draws and by draws from all of [0, n);
//   pairs     one pair of each draw (picked by an independent generator) uniform over all pairs,
//             and the whole k-subset uniform over all C(n, k), against a run of k consecutive
//             indices from a uniform start (uniform positions, clustered pairs).
// Drawing with replacement is caught by the distinctness check.
#include "algorithms/codecs/random_subset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <vector>

namespace cedar {
namespace {

using Sampler = std::function<std::vector<int64_t>(uint64_t key, int64_t n, int64_t k)>;

std::vector<int64_t> uniform(uint64_t key, int64_t n, int64_t k) {
  std::vector<int64_t> out(static_cast<size_t>(k));
  uniform_subset(key, n, k, out.data());
  return out;
}

// Floyd's algorithm with `below` built on the same word stream (for the biased variants).
Sampler floyd_with(std::function<uint32_t(CounterIntegers&, uint32_t)> below) {
  return [below](uint64_t key, int64_t n, int64_t k) {
    CounterIntegers words(key);
    std::vector<int64_t> out(static_cast<size_t>(k));
    std::vector<uint64_t> bits;
    floyd_subset(
        n, k, [&](uint32_t r) { return below(words, r); }, out.data(), bits);
    return out;
  };
}

// Biased: k consecutive indices (cyclically) from a uniform start, listed ascending.
std::vector<int64_t> run_of_k(uint64_t key, int64_t n, int64_t k) {
  CounterIntegers words(key);
  const int64_t start = words.below(static_cast<uint32_t>(n));
  std::vector<int64_t> out;
  for (int64_t j = 0; j < k; ++j) out.push_back((start + j) % n);
  std::sort(out.begin(), out.end());
  return out;
}

// Σ (c − e)² / e over counts with equal expectations e.
double chi_square(const std::vector<int64_t>& counts, double e) {
  double x = 0;
  for (int64_t c : counts) x += (static_cast<double>(c) - e) * (static_cast<double>(c) - e) / e;
  return x;
}

// The positions statistic over `draws` k-subsets of [0, n) counted in `bins` equal bins: with
// E = draws·k/bins, (n − 1)/(n − k) · Σ (C − E)²/E is χ² with bins − 1 degrees of freedom for a
// uniform sampler (the counts of a multivariate hypergeometric draw, summed over draws).
double positions_statistic(const Sampler& sample, int64_t n, int64_t k, int64_t bins,
                           int64_t draws) {
  std::vector<int64_t> counts(static_cast<size_t>(bins));
  for (int64_t d = 0; d < draws; ++d)
    for (int64_t i : sample(1000 + static_cast<uint64_t>(d), n, k)) {
      // An index outside [0, n) (a broken sampler can give one) is as far from uniform as it gets.
      if (i < 0 || i >= n) return std::numeric_limits<double>::infinity();
      ++counts[static_cast<size_t>(i * bins / n)];
    }
  const double e = static_cast<double>(draws * k) / static_cast<double>(bins);
  return chi_square(counts, e) * static_cast<double>(n - 1) / static_cast<double>(n - k);
}

// One pair of each of `draws` k-subsets of [0, n), chosen uniformly by its own generator, counted
// over the C(n, 2) pairs: multinomial and uniform for a uniform sampler, χ² with C(n, 2) − 1
// degrees of freedom.
double pairs_statistic(const Sampler& sample, int64_t n, int64_t k, int64_t draws) {
  std::mt19937_64 pick(12345);
  std::vector<int64_t> counts(static_cast<size_t>(n * n));
  for (int64_t d = 0; d < draws; ++d) {
    const std::vector<int64_t> s = sample(5000 + static_cast<uint64_t>(d), n, k);
    int64_t a = 0, b = 0;
    while (a == b) {
      a = static_cast<int64_t>(pick() % static_cast<uint64_t>(k));
      b = static_cast<int64_t>(pick() % static_cast<uint64_t>(k));
    }
    ++counts[static_cast<size_t>(std::min(s[a], s[b]) * n + std::max(s[a], s[b]))];
  }
  std::vector<int64_t> pairs;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) pairs.push_back(counts[static_cast<size_t>(i * n + j)]);
  return chi_square(pairs, static_cast<double>(draws) / static_cast<double>(pairs.size()));
}

TEST(RandomSubset, DistinctAscendingInRangeAndAFunctionOfTheKey) {
  for (int64_t n : {1, 2, 3, 63, 64, 65, 1000, 100003})
    for (int64_t k : {int64_t{0}, int64_t{1}, n / 100, n / 2, n - 1, n}) {
      if (k < 0 || k > n) continue;
      const std::vector<int64_t> s = uniform(42, n, k);
      ASSERT_EQ(static_cast<int64_t>(s.size()), k);
      for (size_t j = 0; j < s.size(); ++j) {
        ASSERT_GE(s[j], 0);
        ASSERT_LT(s[j], n);
        if (j > 0) {
          ASSERT_LT(s[j - 1], s[j]) << n << ", k = " << k;  // ascending, so distinct
        }
      }
      EXPECT_EQ(s, uniform(42, n, k));
    }
  EXPECT_NE(uniform(42, 100003, 1000), uniform(43, 100003, 1000));
  // One sampler reused across sizes draws what fresh ones draw (the scan leaves its bitmap clear).
  UniformSubset reused;
  for (int64_t n : {100003, 1000, 65, 100003, 64, 3})
    for (int64_t k : {int64_t{1}, n / 7, n - 1, n}) {
      std::vector<int64_t> s(static_cast<size_t>(k));
      reused.draw(9, n, k, s.data());
      EXPECT_EQ(s, uniform(9, n, k)) << n << ", k = " << k;
    }
  std::vector<int64_t> out(3);
  EXPECT_THROW(uniform_subset(1, 2, 3, out.data()), std::invalid_argument);
  EXPECT_THROW(uniform_subset(1, int64_t{1} << 32, 3, out.data()), std::invalid_argument);
  // Drawing with replacement: duplicates, which the check above rejects.
  std::mt19937_64 gen(1);
  std::set<int64_t> drawn;
  for (int j = 0; j < 100; ++j) drawn.insert(static_cast<int64_t>(gen() % 1000));
  EXPECT_LT(drawn.size(), 100u);
}

TEST(RandomSubset, BoundedIntegersHaveNoModuloBias) {
  const uint32_t r = 3u << 30;  // 2^32 mod r = 2^30: the biased reductions' worst case
  const double bound = 42.7;    // χ², 8 degrees of freedom, p = 10^-6
  auto statistic = [&](const std::function<uint32_t(CounterIntegers&)>& draw) {
    CounterIntegers words(77);
    std::vector<int64_t> counts(9);
    const int64_t n = 90000;
    for (int64_t d = 0; d < n; ++d) {
      const uint32_t v = draw(words);
      EXPECT_LT(v, r);
      ++counts[(v % 3) * 3 + (v >> 30)];
    }
    return chi_square(counts, n / 9.0);
  };
  EXPECT_LT(statistic([&](CounterIntegers& w) { return w.below(r); }), bound);
  EXPECT_GT(statistic([&](CounterIntegers& w) { return w.next_word() % r; }), 100 * bound);
  EXPECT_GT(statistic([&](CounterIntegers& w) {
              return static_cast<uint32_t>((uint64_t{w.next_word()} * r) >> 32);
            }),
            100 * bound);
}

TEST(RandomSubset, EveryPositionEquallyLikely) {
  // 1000 positions, 999 degrees of freedom; 40000 positions in 100 bins, 99.
  EXPECT_LT(positions_statistic(uniform, 1000, 100, 1000, 10000), 1226.0);
  EXPECT_LT(positions_statistic(uniform, 40000, 400, 100, 10000), 180.8);
  const Sampler modulo16 = floyd_with([](CounterIntegers& w, uint32_t r) {
    return (w.next_word() & 0xffff) % r;  // values below 2^16 mod r twice as likely
  });
  const Sampler whole_range = floyd_with([](CounterIntegers& w, uint32_t) {
    return w.below(1000);  // t from all of [0, n) instead of [0, j]
  });
  EXPECT_GT(positions_statistic(modulo16, 40000, 400, 100, 10000), 10 * 180.8);
  EXPECT_GT(positions_statistic(whole_range, 1000, 100, 1000, 10000), 10 * 1226.0);
}

TEST(RandomSubset, PairsAndWholeSubsetsEquallyLikely) {
  // 30 indices: 435 pairs, 434 degrees of freedom.
  EXPECT_LT(pairs_statistic(uniform, 30, 5, 60000), 588.7);
  EXPECT_GT(pairs_statistic(run_of_k, 30, 5, 60000), 10 * 588.7);
  // Every 3-subset of 8 (56 of them, 55 degrees of freedom), the run of 3 only hits 8 of them.
  auto subsets_statistic = [](const Sampler& sample) {
    std::vector<int64_t> counts(256);
    const int64_t draws = 56000;
    for (int64_t d = 0; d < draws; ++d) {
      int mask = 0;
      for (int64_t i : sample(900000 + static_cast<uint64_t>(d), 8, 3)) mask |= 1 << i;
      ++counts[static_cast<size_t>(mask)];
    }
    std::vector<int64_t> three;
    for (int mask = 0; mask < 256; ++mask)
      if (__builtin_popcount(mask) == 3) three.push_back(counts[static_cast<size_t>(mask)]);
    EXPECT_EQ(three.size(), 56u);
    return chi_square(three, draws / 56.0);
  };
  EXPECT_LT(subsets_statistic(uniform), 119.9);
  EXPECT_GT(subsets_statistic(run_of_k), 10 * 119.9);
}

}  // namespace
}  // namespace cedar
