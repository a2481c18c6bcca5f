#pragma once
// A distribution-free confidence interval for a median (order statistics; e.g. Conover, Practical
// Nonparametric Statistics, 3rd ed., sec. 3.2): with x_(1) ≤ ... ≤ x_(n) and B ~ Binomial(n, 1/2),
// [x_(j), x_(n+1-j)] holds the population median with probability 1 − 2·P(B ≤ j − 1), for j the
// largest rank whose coverage is still at least `level`. It assumes only that the values are
// independent draws of one distribution. Below 6 values no such interval reaches 95%
// (1 − 2/2^5 = 93.75% at n = 5): nullopt. No LibTorch here.
#include <optional>
#include <vector>

namespace cedar {

struct MedianInterval {
  double low = 0, high = 0;  // x_(j) and x_(n+1-j)
  int rank = 0;              // j (1-based)
  double coverage = 0;       // 1 − 2·P(B ≤ j − 1), at least the level asked for
};

std::optional<MedianInterval> median_interval(std::vector<double> values, double level = 0.95);

}  // namespace cedar
