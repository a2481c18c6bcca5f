#pragma once
// The optimum f* of the convex objectives of models/linear_models.cpp over a whole regression
// set (datasets/regression.h), in float64, for the optimality gap f(θ_k) − f* of full-batch runs
// (LAG, Chen et al., NeurIPS 2018, plots and counts rounds against this gap).
//
//   linear    f(θ) = (1/2N)‖Xθ − y‖²: θ* solves the normal equations XᵀX θ = Xᵀy
//             (torch::linalg_solve; XᵀX is positive definite for the sets we build).
//   logistic  f(θ) = (1/N) Σ log(1 + exp(−y_i x_iᵀθ)) + (λ/2)‖θ‖²: minimised by Newton's method
//             with backtracking (Armijo) line search from θ = 0, until ‖∇f(θ)‖ ≤ 1e-10. Newton
//             rather than gradient descent: with λ small the condition number is large and
//             gradient descent would need ~10^5 steps to that tolerance; Newton needs tens. The
//             unit test checks both agree on a small problem.
// N = M·n, all shards together: with equal shards, the mean of the workers' mean losses.
#include <torch/types.h>

#include <string>

#include "datasets/regression.h"

namespace cedar {

struct ConvexOptimum {
  torch::Tensor theta;   // float64 [d]
  double value = 0;      // f*
  double grad_norm = 0;  // ‖∇f(θ*)‖ reached
};

// f(θ) over the whole set, θ float64 [d]; `l2` the logistic regulariser (ignored for linear).
double convex_objective(const RegressionSet& set, const torch::Tensor& theta, double l2);
// ∇f(θ), float64 [d].
torch::Tensor convex_gradient(const RegressionSet& set, const torch::Tensor& theta, double l2);
// Throws std::runtime_error if the logistic solve does not reach the tolerance in 200 steps.
ConvexOptimum convex_optimum(const RegressionSet& set, double l2);

}  // namespace cedar
