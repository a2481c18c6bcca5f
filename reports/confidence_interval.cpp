#include "reports/confidence_interval.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <stdexcept>

namespace cedar {
namespace {

struct Moments {
  double mean = 0, var = 0;  // var: the unbiased sample variance
  size_t n = 0;
};

Moments moments(const std::vector<double>& x) {
  Moments m;
  m.n = x.size();
  for (double v : x) m.mean += v;
  m.mean /= static_cast<double>(m.n);
  for (double v : x) m.var += (v - m.mean) * (v - m.mean);
  m.var /= static_cast<double>(m.n - 1);
  return m;
}

Interval around(double mean, double se, double df, double level) {
  Interval i;
  i.mean = mean;
  i.df = df;
  i.half_width = se > 0 ? t_quantile(0.5 + level / 2, df) * se : 0;
  i.low = mean - i.half_width;
  i.high = mean + i.half_width;
  return i;
}

}  // namespace

double t_quantile(double p, double df) {
  if (!(df > 0) || !(p > 0 && p < 1))
    throw std::invalid_argument("t_quantile: needs df > 0 and 0 < p < 1");
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), p);
}

std::optional<Interval> mean_interval(const std::vector<double>& x, double level) {
  if (x.size() < 2) return std::nullopt;
  const Moments m = moments(x);
  return around(m.mean, std::sqrt(m.var / static_cast<double>(m.n)), static_cast<double>(m.n - 1),
                level);
}

std::optional<Interval> paired_interval(const std::vector<double>& a, const std::vector<double>& b,
                                        double level) {
  if (a.size() != b.size())
    throw std::invalid_argument("paired_interval: the samples differ in size");
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return mean_interval(d, level);
}

std::optional<Interval> welch_interval(const std::vector<double>& a, const std::vector<double>& b,
                                       double level) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const Moments ma = moments(a), mb = moments(b);
  const double va = ma.var / static_cast<double>(ma.n), vb = mb.var / static_cast<double>(mb.n);
  const double se2 = va + vb;
  const double df =
      se2 > 0
          ? se2 * se2 /
                (va * va / static_cast<double>(ma.n - 1) + vb * vb / static_cast<double>(mb.n - 1))
          : static_cast<double>(ma.n + mb.n - 2);
  return around(ma.mean - mb.mean, std::sqrt(se2), df, level);
}

}  // namespace cedar
