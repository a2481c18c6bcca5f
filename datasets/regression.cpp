// Regression data sets for full-batch convex experiments.
//
// Increasing smoothness (synthetic-regression). LAG (Chen, Giannakis, Sun, Yin, NeurIPS 2018)
// Sec. 5 tests LAG on synthetic linear and logistic regression over M = 9 workers whose
// smoothness constants L_m increase with m. The construction is that of the authors' reference
// code (the MATLAB scripts released with the paper): a 50 x 50 standard Gaussian matrix, its QR
// factor Q, and worker m's data matrix X{m} = 1.3^(m−1)·Q(:,m)·Q(:,m)' + eye(50), every worker
// with the same 50 targets (there, the first 50 targets of a real data set; here standard
// Gaussian for least squares and random signs for logistic regression, since labels ±1 are what
// the logistic loss takes). λ_max(X_mᵀX_m) = (1 + 1.3^(m−1))²: from 4 (m = 1) to 83.9 (m = 9).
// Our d x d Gaussian matrix is orthonormalised by modified Gram–Schmidt (the Q of a QR
// factorisation up to the signs of its columns, which leave q_m q_mᵀ unchanged).
//
// Sign counterexample (sign-counterexample). Karimireddy, Rebjock, Stich, Jaggi, "Error Feedback
// Fixes SignSGD and other Gradient Compression Schemes", ICML 2019, Sec. 3, show simple convex
// problems where signSGD does not converge to the optimum because the sign is a biased
// compressor, and that error feedback removes the bias. This set is such a problem for the
// distributed signSGD Cedar implements (majority vote; Bernstein et al. 2019): worker m holds
// the d unit vectors e_1..e_d with targets b_m, so its mean loss (1/2d)‖θ − b_m‖² has gradient
// (θ − b_m)/d. A majority of (M+1)/2 workers has b_m = b + 1 and the rest b − 10. The vote in
// every coordinate is the majority's sign, so signSGD settles at θ = b + 1 (within one step),
// while the optimum is the mean of the b_m, θ* = b + ((M+1)/2 − 10·(M−1)/2)/M: for M = 3,
// θ* = b − 8/3, and f(b + 1) − f* = (1/2)(11/3)² ≈ 6.72 however small the step. (The same
// median-not-mean behaviour of majority vote on heterogeneous data: Chen, Chen, Sun, Wu, Hong,
// NeurIPS 2020.) EF-signSGD averages the workers' scaled signs with error feedback and converges
// to a neighbourhood of θ* that shrinks with its step size.
#include "datasets/regression.h"

#include <torch/torch.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace cedar {
namespace {

constexpr double kTwoPi = 6.283185307179586;

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Box–Muller, one value per call (the second of each pair is dropped: simple and portable).
double gaussian(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform01(rng);  // (0, 1]
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// The columns of a d x d standard Gaussian matrix, orthonormalised by modified Gram–Schmidt
// (float64). columns[j][i] is entry (i, j).
std::vector<std::vector<double>> orthonormal_columns(int64_t d, std::mt19937_64& rng) {
  std::vector<std::vector<double>> q(static_cast<size_t>(d), std::vector<double>(d));
  for (auto& column : q)
    for (double& v : column) v = gaussian(rng);
  for (size_t j = 0; j < q.size(); ++j) {
    for (size_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < d; ++i) dot += q[j][i] * q[k][i];
      for (int64_t i = 0; i < d; ++i) q[j][i] -= dot * q[k][i];
    }
    double norm = 0;
    for (double v : q[j]) norm += v * v;
    norm = std::sqrt(norm);
    if (!(norm > 1e-12)) throw std::runtime_error("regression: a singular Gaussian matrix drawn");
    for (double& v : q[j]) v /= norm;
  }
  return q;
}

void check_task(const std::string& task) {
  if (task != "linear" && task != "logistic")
    throw std::invalid_argument("regression data: task must be linear or logistic, got '" + task +
                                "'");
}

}  // namespace

torch::Tensor RegressionSet::shard_features(int64_t m) const {
  return features.narrow(0, m * per_shard(), per_shard());
}

torch::Tensor RegressionSet::shard_targets(int64_t m) const {
  return targets.narrow(0, m * per_shard(), per_shard());
}

RegressionSet make_increasing_smoothness(int64_t shards, int64_t dim, double growth,
                                         const std::string& task, uint64_t seed) {
  check_task(task);
  if (dim < 1 || dim > 4096 || shards < 1 || shards > dim || !(growth > 0))
    throw std::invalid_argument(
        "synthetic-regression: need 1 <= shards <= features <= 4096 and growth > 0; got shards=" +
        std::to_string(shards) + " features=" + std::to_string(dim) +
        " growth=" + std::to_string(growth));
  std::mt19937_64 rng(seed ^ 0x1A6C0FFEE5EEDull);
  const auto q = orthonormal_columns(dim, rng);
  std::vector<double> y(static_cast<size_t>(dim));
  for (double& v : y) v = task == "linear" ? gaussian(rng) : (rng() >> 63 ? 1.0 : -1.0);

  RegressionSet set;
  set.task = task;
  set.shards = shards;
  auto x = torch::empty({shards * dim, dim}, torch::kDouble);
  auto t = torch::empty({shards * dim}, torch::kDouble);
  double* xp = x.data_ptr<double>();
  double* tp = t.data_ptr<double>();
  for (int64_t m = 0; m < shards; ++m) {
    const double scale = std::pow(growth, static_cast<double>(m));
    const auto& qm = q[static_cast<size_t>(m)];
    for (int64_t i = 0; i < dim; ++i) {
      double* row = xp + (m * dim + i) * dim;
      for (int64_t j = 0; j < dim; ++j) row[j] = scale * qm[i] * qm[j] + (i == j ? 1.0 : 0.0);
      tp[m * dim + i] = y[static_cast<size_t>(i)];
    }
  }
  set.features = x.to(torch::kFloat);
  set.targets = t.to(torch::kFloat);
  return set;
}

RegressionSet make_sign_counterexample(int64_t shards, int64_t dim, uint64_t seed) {
  if (shards < 3 || shards % 2 == 0 || dim < 1 || dim > 4096)
    throw std::invalid_argument(
        "sign-counterexample: need an odd number of shards >= 3 and 1 <= features <= 4096; got "
        "shards=" +
        std::to_string(shards) + " features=" + std::to_string(dim));
  std::mt19937_64 rng(seed ^ 0x51C4C0DE5EEDull);
  std::vector<double> b(static_cast<size_t>(dim));
  for (double& v : b) v = 2 * uniform01(rng) - 1;
  RegressionSet set;
  set.task = "linear";
  set.shards = shards;
  set.features = torch::eye(dim, torch::kFloat).repeat({shards, 1});
  set.targets = torch::empty({shards * dim}, torch::kFloat);
  float* tp = set.targets.data_ptr<float>();
  for (int64_t m = 0; m < shards; ++m)
    for (int64_t i = 0; i < dim; ++i)
      tp[m * dim + i] = static_cast<float>(b[static_cast<size_t>(i)] + (2 * m < shards ? 1 : -10));
  return set;
}

}  // namespace cedar
