#pragma once
// Two-sided confidence intervals of a mean and of a difference of means, with Student's t
// quantiles from Boost.Math. Claims (reports/claims.h) are tested on these intervals. No LibTorch.
//   one sample:  mean ± t(1 − α/2, n − 1) · s / √n
//   paired:      the one-sample interval of the per-pair differences a_i − b_i (the pairs share a
//                seed, so what the seed fixes cancels)
//   Welch:       (mean a − mean b) ± t(1 − α/2, ν) · √(s_a²/n_a + s_b²/n_b), with the
//                Welch–Satterthwaite degrees of freedom
//                ν = (s_a²/n_a + s_b²/n_b)² / ((s_a²/n_a)²/(n_a − 1) + (s_b²/n_b)²/(n_b − 1))
// Each needs at least two values per sample; with fewer the functions return nullopt. Where every
// sample is constant the interval has width 0 (and ν, undefined, is given as n_a + n_b − 2).
#include <optional>
#include <vector>

namespace cedar {

struct Interval {
  double mean = 0;  // the estimate: a mean, or a difference of means
  double low = 0, high = 0;
  double half_width = 0;  // (high − low) / 2: the smallest difference the samples resolve
  double df = 0;          // degrees of freedom of the t quantile
};

// The t quantile: P(T ≤ t) = p for Student's t with `df` (> 0, not necessarily whole) degrees of
// freedom.
double t_quantile(double p, double df);

std::optional<Interval> mean_interval(const std::vector<double>& x, double level = 0.95);
// a and b in the same order, pair by pair (same size).
std::optional<Interval> paired_interval(const std::vector<double>& a, const std::vector<double>& b,
                                        double level = 0.95);
std::optional<Interval> welch_interval(const std::vector<double>& a, const std::vector<double>& b,
                                       double level = 0.95);

}  // namespace cedar
