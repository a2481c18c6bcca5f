#pragma once
// LAG's upload rule (Chen, Giannakis, Sun, Yin, NeurIPS 2018; the worker-side rule LAG-WK, as
// algorithms/lag.cpp states it for the average the optimizer applies) for a parameter-server
// worker, in the paper's own setting: a worker whose gradient changed little since its last
// upload sends none, and the server reuses that upload. Worker m uploads at step k iff
//   ‖∇_m(θ^k) − ∇_m(θ^_m)‖² > (ξ/D) · Σ_{d=1..D} ‖θ^{k+1−d} − θ^{k−d}‖² / η_{k−d}²
// (the first step always). Squared norms are summed in fp64.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/lag_threshold.h"
#include "runner/train/checkpoint.h"

namespace cedar {

class LagUploadRule {
 public:
  LagUploadRule(double xi, int64_t history) : threshold_(xi, history) {}
  // The parameters moved by ‖Δθ‖² = `squared_move` at learning rate `lr` (a move at lr <= 0
  // counts 0); the oldest of more than D moves is dropped.
  void moved(double squared_move, double lr) { threshold_.moved(squared_move, lr); }
  // Whether the gradient `grads` (model order) is uploaded; when it is, it becomes the last
  // upload that later gradients are compared with.
  bool upload(const std::vector<at::Tensor>& grads);
  double threshold() const { return threshold_.value(); }
  // Checkpoints: the moves and the last upload under `prefix`.
  void save(TensorMap& state, const std::string& prefix) const;
  void restore(const TensorMap& state, const std::string& prefix);

 private:
  LagThreshold threshold_;  // the rule's threshold, the same as all-reduce LAG-WK's
  std::vector<at::Tensor> last_;
};

// Σ ‖a_i − b_i‖² in fp64.
double squared_distance(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b);

}  // namespace cedar
