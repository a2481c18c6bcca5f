// The distribution-free interval of a median (reports/median_interval.h) against binomial
// probabilities counted here by hand (C(n, k) / 2^n), not with the library the code uses.
#include "reports/median_interval.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cedar {
namespace {

// P(B ≤ k) for B ~ Binomial(n, 1/2), by summing C(n, i) / 2^n.
double cdf(int n, int k) {
  double sum = 0, c = 1;  // c = C(n, i)
  for (int i = 0; i <= k; ++i) {
    sum += c;
    c = c * (n - i) / (i + 1);
  }
  return sum / std::pow(2.0, n);
}

TEST(MedianInterval, RanksAndCoverageFollowTheBinomial) {
  // n = 6: only the extremes reach 95% (1 - 2/64); n = 10: the 2nd (1 - 2 * 11/1024), not the
  // 3rd (1 - 2 * 56/1024 < 95%); n = 15: the 4th (1 - 2 * 576/32768 = 96.5%).
  struct Case {
    int n, rank;
  };
  for (const Case c : {Case{6, 1}, Case{10, 2}, Case{15, 4}, Case{30, 10}}) {
    std::vector<double> x;
    for (int i = c.n; i >= 1; --i) x.push_back(i * 0.5);  // unsorted on purpose
    const auto m = median_interval(x);
    ASSERT_TRUE(m) << c.n;
    EXPECT_EQ(m->rank, c.rank) << c.n;
    EXPECT_NEAR(m->coverage, 1 - 2 * cdf(c.n, c.rank - 1), 1e-12) << c.n;
    EXPECT_GE(m->coverage, 0.95) << c.n;
    EXPECT_LT(1 - 2 * cdf(c.n, c.rank), 0.95) << c.n;  // one rank further would not reach it
    EXPECT_EQ(m->low, c.rank * 0.5) << c.n;
    EXPECT_EQ(m->high, (c.n + 1 - c.rank) * 0.5) << c.n;
  }
}

TEST(MedianInterval, NoneBelowSixValuesAtNinetyFivePercent) {
  EXPECT_FALSE(median_interval({1, 2, 3, 4, 5}));
  EXPECT_FALSE(median_interval({}));
  const auto lower_level = median_interval({1, 2, 3, 4, 5}, 0.9);  // 93.75% covers 90%
  ASSERT_TRUE(lower_level);
  EXPECT_EQ(lower_level->low, 1);
  EXPECT_EQ(lower_level->high, 5);
}

}  // namespace
}  // namespace cedar
