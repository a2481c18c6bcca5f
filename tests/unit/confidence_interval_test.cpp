// Confidence intervals against values computed independently: Student t quantiles from R
// (`qt(p, df)`, R 4.x; the same digits as published t tables) and worked examples whose means,
// variances and Welch–Satterthwaite degrees of freedom are computed by hand in the comments.
#include "reports/confidence_interval.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cedar {
namespace {

// R: qt(0.975, c(1, 2, 3, 4, 5, 9, 10, 30)); qt(0.95, 10).
constexpr double kT975[] = {12.7062047361747, 4.30265272974946, 3.18244630528371, 2.77644510519779,
                            2.57058183563631};  // df 1..5
constexpr double kT975df9 = 2.26215716279820, kT975df10 = 2.22813885198627,
                 kT975df30 = 2.04227245630124, kT95df10 = 1.81246112281168;

TEST(ConfidenceInterval, TQuantilesMatchR) {
  for (int df = 1; df <= 5; ++df) EXPECT_NEAR(t_quantile(0.975, df), kT975[df - 1], 1e-10) << df;
  EXPECT_NEAR(t_quantile(0.975, 9), kT975df9, 1e-10);
  EXPECT_NEAR(t_quantile(0.975, 10), kT975df10, 1e-10);
  EXPECT_NEAR(t_quantile(0.975, 30), kT975df30, 1e-10);
  EXPECT_NEAR(t_quantile(0.95, 10), kT95df10, 1e-10);
  EXPECT_NEAR(t_quantile(0.025, 4), -kT975[3], 1e-10);  // symmetric
  EXPECT_THROW(t_quantile(0.975, 0), std::invalid_argument);
}

// x = 1, 2, 3, 4, 5: mean 3, s² = (4 + 1 + 0 + 1 + 4) / 4 = 2.5, se = √(2.5 / 5) = √0.5;
// df = 4: 3 ± 2.77644510519779 · √0.5 = 3 ± 1.96324316.
TEST(ConfidenceInterval, OneSampleMean) {
  auto ci = mean_interval({1, 2, 3, 4, 5});
  ASSERT_TRUE(ci);
  EXPECT_DOUBLE_EQ(ci->mean, 3);
  EXPECT_DOUBLE_EQ(ci->df, 4);
  EXPECT_NEAR(ci->half_width, kT975[3] * std::sqrt(0.5), 1e-9);
  EXPECT_NEAR(ci->low, 3 - 1.96324316, 1e-8);
  EXPECT_NEAR(ci->high, 3 + 1.96324316, 1e-8);
  EXPECT_FALSE(mean_interval({1}));  // one value has no spread
}

// Three seeds, method a = 91, 93, 92 and baseline b = 90, 92.5, 90.5 (accuracy, %). Per-seed
// differences d = 1, 0.5, 1.5: mean 1, s² = (0 + 0.25 + 0.25) / 2 = 0.25, se = 0.5 / √3;
// df = 2: 1 ± 4.30265272974946 · 0.5 / √3 = 1 ± 1.24206886, i.e. [-0.24206886, 2.24206886].
// Unpaired (Welch) the same numbers give a wider interval: the seeds' common part does not cancel.
TEST(ConfidenceInterval, PairedDifferencesBySeed) {
  const std::vector<double> a = {91, 93, 92}, b = {90, 92.5, 90.5};
  auto ci = paired_interval(a, b);
  ASSERT_TRUE(ci);
  EXPECT_NEAR(ci->mean, 1, 1e-12);
  EXPECT_DOUBLE_EQ(ci->df, 2);
  EXPECT_NEAR(ci->half_width, kT975[1] * 0.5 / std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(ci->low, -0.24206886, 1e-8);
  EXPECT_NEAR(ci->high, 2.24206886, 1e-8);
  EXPECT_GT(welch_interval(a, b)->half_width, ci->half_width);
  EXPECT_THROW(paired_interval({1, 2, 3}, {1, 2}), std::invalid_argument);
}

// Welch: a = 10, 13, 10 (n 3, mean 11, s² = (1 + 4 + 1) / 2 = 3, s²/n = 1) and
// b = 7, 8, 9, 10, 11 (n 5, mean 9, s² = (4 + 1 + 0 + 1 + 4) / 4 = 2.5, s²/n = 0.5).
// se² = 1 + 0.5 = 1.5; ν = 1.5² / (1² / 2 + 0.5² / 4) = 2.25 / 0.5625 = 4;
// 2 ± 2.77644510519779 · √1.5 = 2 ± 3.40043690.
TEST(ConfidenceInterval, WelchWithSatterthwaiteDegreesOfFreedom) {
  auto ci = welch_interval({10, 13, 10}, {7, 8, 9, 10, 11});
  ASSERT_TRUE(ci);
  EXPECT_NEAR(ci->mean, 2, 1e-12);
  EXPECT_NEAR(ci->df, 4, 1e-12);
  EXPECT_NEAR(ci->half_width, 3.40043690, 1e-8);
  EXPECT_NEAR(ci->low, 2 - 3.40043690, 1e-8);
  EXPECT_FALSE(welch_interval({1, 2}, {3}));
}

// Constant samples: no spread, an interval of width 0 at the mean difference.
TEST(ConfidenceInterval, ConstantSamplesHaveWidthZero) {
  auto ci = welch_interval({2, 2, 2}, {1, 1, 1});
  ASSERT_TRUE(ci);
  EXPECT_DOUBLE_EQ(ci->half_width, 0);
  EXPECT_DOUBLE_EQ(ci->low, 1);
  EXPECT_DOUBLE_EQ(ci->high, 1);
}

}  // namespace
}  // namespace cedar
