// LASG: Chen, Sun, Yin, "LASG: Lazily Aggregated Stochastic Gradients for Communication-Efficient
// Distributed Learning", arXiv:2002.11360 (2020): LAG (algorithms/lag.cpp) for stochastic
// gradients, with two of its rules, LASG-WK2 (worker side) and LASG-PS (server side).
//
// Why LAG's rule fails with minibatches: LAG-WK compares a worker's fresh gradient with its last
// upload, two gradients of DIFFERENT minibatches, so the change it measures holds their sampling
// noise, which does not shrink as θ settles while the parameter moves do; nearly every step
// uploads (docs/reproduction_findings.md: 99% of the worker-steps on ResNet-20). LASG's rules
// compare two gradients of the SAME minibatch (WK2), or no gradients at all (PS).
//
// The paper's notation: M workers, stepsize α, θ̂_m the iterate at which worker m's last upload
// was computed, b_m^k its minibatch at step k (the paper writes the sample ξ_m^k; b here, since ξ
// is LAG's threshold weight), D past moves weighted ξ_d = ξ/D, and the threshold
//   R^k = (1/(α²M²)) Σ_{d=1..D} ξ_d ‖θ^{k+1−d} − θ^{k−d}‖².
// Worker m skips (the server reuses its last upload) when its rule holds:
//   LASG-WK2, the paper's condition (10):   ‖∇ℓ(θ^k; b_m^k) − ∇ℓ(θ̂_m; b_m^k)‖² ≤ R^k
//   LASG-PS, decided by the server:          L_m² ‖θ^k − θ̂_m‖² ≤ R^k
// L_m: a smoothness estimate of worker m's loss (‖∇L_m(θ) − ∇L_m(θ')‖ ≤ L_m ‖θ − θ'‖), so that
// PS's left side bounds WK2's without computing a gradient. Staleness is bounded: a worker that
// has not uploaded for max_delay steps uploads whatever its rule says. An upload is the fresh
// ∇ℓ(θ^k; b_m^k) and sets θ̂_m ← θ^k; the aggregate ∇^k = ∇^{k−1} + Σ_{uploaders} δ_m^k (δ: the
// fresh gradient minus the last upload) gives θ^{k+1} = θ^k − α ∇^k.
//
// Normalisation, as LAG's: the optimizer applies lr η to the AVERAGE of the workers' gradients, the
// paper's iterates with α = η/P, and R^k becomes (ξ/D) Σ_d ‖θ^{k+1−d} − θ^{k−d}‖² / η_{k−d}², each
// move in units of the rate it was made with (algorithms/lag_threshold.h). The authors' code
// (github.com/sunyuejiao/lasg: utils_gpu.py check_wk2 and check_ps, main_lasg.py) weights the
// gradients 1/M and sets thrd = Σ_{last 10} ‖Δθ‖² / (M² lr² · 10): the same rule with D = 10 and
// ξ = 1. Its check_ps compares L·‖θ^k − θ̂_m‖² with that threshold, so its L is L_m²/M² here (its
// MNIST L = 0.1 at M = 20 is L_m ≈ 6.3). Ties upload, as in that code (an upload when diff >=
// thrd): a rank skips only when its left side is strictly below R^k, so at ξ = 0 every step
// uploads and LASG trains as plain SGD (its lossless setting).
//
// The all-reduce realisation. Every rank is a worker and evaluates WK2 itself, as in the paper.
// PS is the server's rule; here each rank evaluates it for itself from state all ranks agree on:
// θ^k and the moves are the same on every rank (all apply the same aggregate), and θ̂_m is θ at
// the step of rank m's last upload, which every rank sees in the exchange. So rank m's decision is
// the one the server would take for worker m, and its skip is the server not asking worker m for
// a gradient. What does not carry over: in the paper a PS skip also spares worker m's gradient
// computation and the download of θ^k; here the trainer computes every rank's gradient before any
// rule runs, and every rank receives the step's uploads (which keeps the aggregates equal). PS
// saves uploads only.
//
// WK2's second gradient ∇ℓ(θ̂_m; b_m^k) is a second forward and backward pass of the step's
// minibatch at θ̂_m, which the trainer offers (StepContext::batch_gradient_at,
// runner/train/batch_gradient.h): compute, not communication, counted in the step stats
// "second_passes" and "second_pass_seconds". No pass is made where the decision is known without
// it: the first step, a rank at max_delay, R^k = 0. Where no pass is offered (a caller without a
// model) a WK2 rank uploads every step.
//
// Exchange and bytes: LAG's (algorithms/lazy_aggregate.h): one allgatherv per step, 4 bytes per
// gradient element from each uploader and the 8-byte length from every rank. Momentum: none (plain
// SGD steps, as the paper's iteration and the authors' code). Step stats: uploads (ranks that
// uploaded), lasg_uploaded (this rank), lasg_threshold (R^k), lasg_change (the rule's left side,
// where it was evaluated), lasg_delay (steps since this rank's last upload, this one included).
//
// Hyper-parameters:
//   rule (wk2)       wk2: the worker's rule (a second pass per step); ps: the server's rule
//   history (10)     D, past parameter moves in the threshold (the authors' code: 10)
//   xi (1)           ξ, with ξ_d = ξ/D (the authors' code: 1)
//   max_delay (50)   steps after an upload by which a rank uploads again whatever its rule says
//                    (the authors' code: 50 for MNIST, 10 for Tiny ImageNet)
//   smoothness (1)   L_m of rule ps, in the units above
#include <ATen/ATen.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/lag_threshold.h"
#include "algorithms/lazy_aggregate.h"

namespace cedar {
namespace {

struct LasgParams {
  std::string rule = "wk2";
  int64_t history = 10;
  double xi = 1.0;
  int64_t max_delay = 50;
  double smoothness = 1.0;
  template <class V>
  void visit(V& v) {
    v("rule", rule,
      "wk2: the worker compares its minibatch's gradient at theta^k and at its last upload's "
      "parameters (a second forward/backward per step); ps: the server's rule, "
      "L_m^2 |theta^k - theta_m|^2 against the threshold, no extra gradient",
      one_of({"wk2", "ps"}));
    v("history", history, "D: past parameter moves in the upload threshold (authors' code: 10)",
      at_least(1));
    v("xi", xi, "xi: threshold weight, xi_d = xi/D for d = 1..D (authors' code: 1)", at_least(0));
    v("max_delay", max_delay,
      "a rank uploads when its last upload is this many steps old, whatever its rule says "
      "(authors' code: 50 for MNIST)",
      at_least(1));
    v("smoothness", smoothness, "L_m: the workers' smoothness estimate in rule ps", at_least(0));
  }
};

class Lasg final : public Algorithm {
 public:
  explicit Lasg(const LasgParams& p) : p_(p), wk2_(p.rule == "wk2"), threshold_(p.xi, p.history) {}

  void setup(const std::vector<NamedTensor>& params, Communicator&) override {
    num_params_ = params.size();
    moves_.setup(params);
    saved_.clear();
    index_.clear();
    for (size_t i = 0; i < params.size(); ++i) {
      saved_.push_back(params[i].tensor.detach().clone());
      index_[params[i].name] = i;
    }
  }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    if (!aggregate_.collect(bucket, num_params_)) return;
    ++delay_;
    const double threshold = threshold_.value();
    // The rule can only skip where its left side (>= 0) may fall below a positive threshold.
    bool upload =
        first_ || delay_ >= p_.max_delay || !(threshold > 0) || (wk2_ && !ctx.batch_gradient_at);
    if (!upload) {
      const double change = wk2_ ? wk2_change(ctx) : ps_change();
      upload = !(change < threshold);
      ctx.stats["lasg_change"] = change;
    }
    ctx.stats["lasg_delay"] = static_cast<double>(delay_);
    if (upload) {
      // θ̂_m ← θ^k, the parameters this step's gradient was computed at.
      for (size_t i = 0; i < saved_.size(); ++i) saved_[i].copy_(moves_.current()[i]);
      delay_ = 0;
    }
    first_ = false;
    const int64_t uploads = aggregate_.exchange(comm, upload);
    ctx.stats["uploads"] = static_cast<double>(uploads);
    ctx.stats["lasg_uploaded"] = upload ? 1.0 : 0.0;
    ctx.stats["lasg_threshold"] = threshold;
  }

  bool uses_batch_gradient_at() const override { return wk2_; }
  bool applies_momentum() const override { return true; }  // plain steps, as LAG's

  void after_step(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>&,
                  Communicator&, StepContext& ctx) override {
    threshold_.moved(moves_.moved(params), ctx.lr);
  }

  void save_state(AlgorithmState& out) const override {
    aggregate_.save(out);
    moves_.save(out);
    for (size_t i = 0; i < saved_.size(); ++i)
      out["upload_params." + std::to_string(i)] = saved_[i].clone();
    save_numbers(out, "moves_per_lr2", threshold_.moves());
    save_number(out, "first", first_ ? 1 : 0);
    save_number(out, "delay", static_cast<double>(delay_));
  }
  void load_state(const AlgorithmState& in) override {
    aggregate_.load(in);
    moves_.load(in);
    for (size_t i = 0; i < saved_.size(); ++i)
      saved_[i].copy_(load_tensor(in, "upload_params." + std::to_string(i)));
    threshold_.set_moves(load_numbers(in, "moves_per_lr2"));
    first_ = load_number(in, "first") != 0;
    delay_ = static_cast<int64_t>(load_number(in, "delay"));
  }

 private:
  // ‖∇ℓ(θ^k; b) − ∇ℓ(θ̂_m; b)‖²: the step's gradients (the buckets, in bucket order) against the
  // second pass's at θ̂_m (by parameter name).
  double wk2_change(StepContext& ctx) {
    const std::vector<at::Tensor> at_saved = ctx.batch_gradient_at(saved_);
    if (at_saved.size() != saved_.size())
      throw std::logic_error("lasg: the second gradient pass returned " +
                             std::to_string(at_saved.size()) + " tensors for " +
                             std::to_string(saved_.size()) + " parameters");
    double change = 0;
    for (const GradBucket* b : aggregate_.buckets())
      for (const GradEntry& e : b->entries) {
        const auto it = index_.find(e.name);
        if (it == index_.end())
          throw std::logic_error("lasg: bucket entry " + e.name + " is not a parameter of setup()");
        change += tensor_squared_distance(e.grad, at_saved[it->second].contiguous());
      }
    return change;
  }

  // L_m² ‖θ^k − θ̂_m‖².
  double ps_change() const {
    double distance = 0;
    for (size_t i = 0; i < saved_.size(); ++i)
      distance += tensor_squared_distance(moves_.current()[i], saved_[i]);
    return p_.smoothness * p_.smoothness * distance;
  }

  LasgParams p_;
  bool wk2_;
  size_t num_params_ = 0;
  bool first_ = true;
  int64_t delay_ = 0;  // steps since this rank's last upload
  LazyAggregate aggregate_{"lasg"};
  ParameterMoves moves_;                 // θ^k, and the moves of the threshold
  std::vector<at::Tensor> saved_;        // θ̂_m, in the order of setup()
  std::map<std::string, size_t> index_;  // parameter name -> its place in setup()
  LagThreshold threshold_;
};

}  // namespace

AlgorithmInfo lasg_algorithm() {
  AlgorithmInfo info = algorithm_info<Lasg, LasgParams>(
      "lasg",
      "LASG: LAG for stochastic gradients; a worker re-uploads only when its minibatch's gradient "
      "at the current and at its last upload's parameters differ more than the recent moves "
      "allow (wk2), or by the server's smoothness bound (ps)",
      "Chen, Sun, Yin, arXiv:2002.11360, 2020");
  info.device_independent = true;
  info.acts_after_step = true;  // the history of parameter moves
  // ξ = 0 uploads on every step under either rule: plain SGD steps through the running aggregate,
  // whose rounding is LAG's (algorithms/lag.cpp says why 1e-3).
  info.lossless = {{"{xi: 0}", 1e-3}, {"{rule: ps, xi: 0}", 1e-3}};
  return info;
}

}  // namespace cedar
