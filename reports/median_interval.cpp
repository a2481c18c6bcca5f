#include "reports/median_interval.h"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>

namespace cedar {

std::optional<MedianInterval> median_interval(std::vector<double> values, double level) {
  const int n = static_cast<int>(values.size());
  if (n == 0) return std::nullopt;
  const boost::math::binomial_distribution<double> b(n, 0.5);
  // The largest j (≤ n/2) whose interval still covers `level`; coverage falls as j grows.
  int rank = 0;
  double coverage = 0;
  for (int j = 1; 2 * j <= n + 1; ++j) {
    const double c = 1 - 2 * boost::math::cdf(b, j - 1);
    if (c < level) break;
    rank = j;
    coverage = c;
  }
  if (rank == 0) return std::nullopt;
  std::sort(values.begin(), values.end());
  return MedianInterval{values[size_t(rank - 1)], values[size_t(n - rank)], rank, coverage};
}

}  // namespace cedar
