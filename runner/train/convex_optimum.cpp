#include "runner/train/convex_optimum.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace cedar {
namespace {

constexpr double kGradientTolerance = 1e-10;
constexpr int kNewtonSteps = 200;

struct Data {
  torch::Tensor x, y;  // float64
};
Data as_double(const RegressionSet& set) {
  return {set.features.to(torch::kDouble), set.targets.to(torch::kDouble)};
}
bool logistic(const RegressionSet& set) { return set.task == "logistic"; }

double objective(const Data& d, const torch::Tensor& theta, double l2, bool logistic) {
  const auto z = torch::mv(d.x, theta);
  if (!logistic) return 0.5 * (z - d.y).square().mean().item<double>();
  return torch::softplus(-d.y * z).mean().item<double>() +
         0.5 * l2 * theta.square().sum().item<double>();
}

torch::Tensor gradient(const Data& d, const torch::Tensor& theta, double l2, bool logistic) {
  const double n = static_cast<double>(d.x.size(0));
  const auto z = torch::mv(d.x, theta);
  if (!logistic) return torch::mv(d.x.t(), z - d.y) / n;
  // d/dz log(1 + exp(−y z)) = −y σ(−y z)
  return torch::mv(d.x.t(), -d.y * torch::sigmoid(-d.y * z)) / n + l2 * theta;
}

}  // namespace

double convex_objective(const RegressionSet& set, const torch::Tensor& theta, double l2) {
  return objective(as_double(set), theta.to(torch::kDouble), l2, logistic(set));
}

torch::Tensor convex_gradient(const RegressionSet& set, const torch::Tensor& theta, double l2) {
  return gradient(as_double(set), theta.to(torch::kDouble), l2, logistic(set));
}

ConvexOptimum convex_optimum(const RegressionSet& set, double l2) {
  const Data d = as_double(set);
  const double n = static_cast<double>(d.x.size(0));
  ConvexOptimum out;
  if (!logistic(set)) {
    const auto gram = torch::mm(d.x.t(), d.x);
    out.theta = torch::linalg_solve(gram, torch::mv(d.x.t(), d.y));
  } else {
    auto theta = torch::zeros({d.x.size(1)}, torch::kDouble);
    const auto eye = torch::eye(d.x.size(1), torch::kDouble);
    for (int step = 0;; ++step) {
      const auto g = gradient(d, theta, l2, true);
      if (g.norm().item<double>() <= kGradientTolerance) break;
      if (step == kNewtonSteps)
        throw std::runtime_error(
            "logistic optimum: Newton did not reach a gradient norm of 1e-10 "
            "in 200 steps (is l2 > 0 or the data not separable?)");
      const auto z = torch::mv(d.x, theta);
      const auto s = torch::sigmoid(z);
      const auto weights = s * (1 - s) / n;  // σ'(y z) = σ(z)(1 − σ(z)) for y = ±1
      const auto hessian = torch::mm(d.x.t() * weights, d.x) + l2 * eye;
      const auto direction = torch::linalg_solve(hessian, g);
      const double f0 = objective(d, theta, l2, true);
      const double slope = torch::dot(g, direction).item<double>();
      double t = 1;
      while (t > 1e-12 && objective(d, theta - t * direction, l2, true) > f0 - 1e-4 * t * slope)
        t *= 0.5;
      theta = theta - t * direction;
    }
    out.theta = theta;
  }
  out.value = objective(d, out.theta, l2, logistic(set));
  out.grad_norm = gradient(d, out.theta, l2, logistic(set)).norm().item<double>();
  return out;
}

}  // namespace cedar
