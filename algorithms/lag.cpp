// LAG-WK: Chen, Giannakis, Sun, Yin, "LAG: Lazily Aggregated Gradient for Communication-Efficient
// Distributed Learning", NeurIPS 2018 (the worker-side rule, LAG-WK).
//
// Worker m keeps its last upload g^_m = ∇_m(θ^_m). At step k it computes ∇_m(θ^k) and uploads only
// if
//   ‖∇_m(θ^_m) − ∇_m(θ^k)‖² > (1/(α²M²)) · Σ_{d=1..D} ξ_d ‖θ^{k+1−d} − θ^{k−d}‖²,   ξ_d = ξ/D,
// otherwise every rank reuses its last upload. The aggregate is updated with the uploaders' deltas
//   ∇^k = ∇^{k−1} + Σ_{uploaders} (∇_m(θ^k) − ∇_m(θ^_m)).
//
// Normalisation. The paper minimises L = Σ_m L_m with θ^{k+1} = θ^k − α ∇^k (a SUM of the M
// workers' gradients). Cedar's optimizer applies lr η to the AVERAGE, so here
//   ∇^k = ∇^{k−1} + (1/P) Σ_{uploaders} (∇_m(θ^k) − ∇_m(θ^_m)),
// the same iterates with α = η/P, and the paper's threshold 1/(α²M²) becomes 1/η²:
//   upload  ⇔  ‖∇_m(θ^_m) − ∇_m(θ^k)‖² > (ξ/D) · Σ_{d=1..D} ‖θ^{k+1−d} − θ^{k−d}‖² / η².
// (Writing 1/(η²P²) with the average would make the rule P² times stricter than the paper's.)
// The authors' reference code uses the same form: thrd = 1/(stepsize²·M²)/D with a summed
// aggregate.
//
// A changing learning rate. The paper's stepsize is constant, so each term ‖θ^{k+1−d} −
// θ^{k−d}‖²/η² is the squared norm of the update direction applied at step k−d. Each move is
// therefore divided by the square of the rate it was made with (η_{k−d}, stored with the move), not
// by today's rate:
//   upload  ⇔  ‖∇_m(θ^_m) − ∇_m(θ^k)‖² > (ξ/D) · Σ_{d=1..D} ‖θ^{k+1−d} − θ^{k−d}‖² / η_{k−d}².
// Dividing moves made at the old rate by the new one squared would inflate the threshold by the
// decay factor squared at a step decay (100× at 10×) and silence every upload for D steps.
//
// The rule is per worker over the WHOLE model, decided once the step's last bucket arrives; the
// exchange, the aggregate and the moves are algorithms/lazy_aggregate.h's (shared with LASG).
// θ history: ‖θ^{k+1} − θ^k‖² is measured in after_step (the parameters after the optimizer step,
// identical on all ranks since everyone applies the same aggregate); missing history (k < D)
// counts as zero. The first step everyone uploads. ctx.stats["uploads"]: uploaders this step.
//
// Momentum: none (applies_momentum() is true, so the optimizer takes plain SGD steps, as the
// paper's gradient-descent iteration does).
//
// Hyper-parameters:
//   history (10)  D, the number of past parameter moves in the threshold (paper: D = 10).
//   xi (1)        ξ, with ξ_d = ξ/D (the paper's experiments: ξ_d = 1/D).
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/lag_threshold.h"
#include "algorithms/lazy_aggregate.h"

namespace cedar {
namespace {

struct LagParams {
  int64_t history = 10;
  double xi = 1.0;
  template <class V>
  void visit(V& v) {
    v("history", history, "D: past parameter moves in the upload threshold (paper: 10)",
      at_least(1));
    v("xi", xi, "xi: threshold weight, xi_d = xi/D for d = 1..D (paper: 1)", at_least(0));
  }
};

class Lag final : public Algorithm {
 public:
  explicit Lag(const LagParams& p) : p_(p), threshold_(p.xi, p.history) {}

  void setup(const std::vector<NamedTensor>& params, Communicator&) override {
    num_params_ = params.size();
    moves_.setup(params);
  }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    if (!aggregate_.collect(bucket, num_params_)) return;
    // After a step that uploaded, the next one probably uploads too: the trigger's pass then also
    // writes what an upload sends (one pass instead of two). Otherwise it only reads.
    const double change = aggregate_.change_since_upload(/*prepare_upload=*/first_ || uploaded_);
    const bool upload = first_ || change > threshold();
    first_ = false;
    uploaded_ = upload;
    const int64_t uploads = aggregate_.exchange(comm, upload);
    ctx.stats["uploads"] = static_cast<double>(uploads);
    ctx.stats["lag_uploaded"] = upload ? 1.0 : 0.0;
    ctx.stats["lag_threshold"] = threshold();
    ctx.stats["lag_change"] = change;
  }

  // LAG is defined for plain gradient steps θ^{k+1} = θ^k − α∇^k: its trigger weighs gradient
  // changes against parameter moves, which heavy-ball momentum would inflate by up to
  // 1/(1−m)² and so silence every upload. The optimizer therefore runs without momentum.
  bool applies_momentum() const override { return true; }

  // Records ‖θ^{k+1} − θ^k‖² / η_k², the move of this step in units of its own rate (a move made
  // at a non-positive rate counts as zero).
  void after_step(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>&,
                  Communicator&, StepContext& ctx) override {
    threshold_.moved(moves_.moved(params), ctx.lr);
  }

  void save_state(AlgorithmState& out) const override {
    aggregate_.save(out);
    moves_.save(out);
    save_numbers(out, "moves_per_lr2", threshold_.moves());
    save_number(out, "first", first_ ? 1 : 0);
  }
  void load_state(const AlgorithmState& in) override {
    aggregate_.load(in);
    moves_.load(in);
    threshold_.set_moves(load_numbers(in, "moves_per_lr2"));
    first_ = load_number(in, "first") != 0;
  }

 private:
  // (ξ/D) Σ_d ‖θ^{k+1−d} − θ^{k−d}‖² / η_{k−d}² (algorithms/lag_threshold.h).
  double threshold() const { return threshold_.value(); }

  LagParams p_;
  size_t num_params_ = 0;
  bool first_ = true;
  bool uploaded_ = false;  // whether the last step uploaded (the prediction for this one)
  LazyAggregate aggregate_{"lag"};
  ParameterMoves moves_;  // θ^k, to measure the next move
  LagThreshold threshold_;
};

}  // namespace

AlgorithmInfo lag_algorithm() {
  AlgorithmInfo info = algorithm_info<Lag, LagParams>(
      "lag",
      "LAG-WK: a worker re-uploads its gradient only when it changed more than the recent "
      "parameter moves allow; everyone else's last upload is reused",
      "Chen, Giannakis, Sun, Yin, NeurIPS 2018");
  info.device_independent = true;
  info.acts_after_step = true;  // the history of parameter moves
  // ξ = 0 uploads every changed gradient (plain steps, as its baseline takes). The aggregate is a
  // running sum (∇ ← ∇ + ΣΔ/P) whose rounding is carried from step to step, and where it ends
  // depends on the CPU's convolution kernels: 1e-5 on one machine, 1.2e-4 on another (the same
  // build); allowed 1e-3, an order above either.
  info.lossless = {{"{xi: 0}", 1e-3}};
  return info;
}

}  // namespace cedar
