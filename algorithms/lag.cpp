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
// The rule is per worker over the WHOLE model: the gradients of every bucket are collected and the
// decision and exchange happen once, when the step's last bucket arrives (the trainer reduces all
// buckets before the optimizer step). θ history: ‖θ^{k+1} − θ^k‖² is measured in after_step (the
// parameters after the optimizer step, identical on all ranks since everyone applies the same
// aggregate); missing history (k < D) counts as zero. The first step everyone uploads.
// Exchange: one allgatherv per step; uploaders contribute their delta (4 bytes per element),
// non-uploaders an empty tensor, so a skipped upload costs zero gradient bytes (the allgatherv's
// 8-byte length per rank is still metered). ctx.stats["uploads"]: uploaders this step.
// Squared norms are summed in fp64 over the fp32 differences (each square exact): on the CPU per
// bucket (per parameter for the moves) in the eight-partial-sum order of codecs/simd.h, the sums
// added in bucket (parameter) order, in one pass over the gradient (the parameters) that also
// keeps what the next step compares with; the aggregate and the buckets are then updated in one
// pass more. Tensors on another device take the equivalent LibTorch operations.
//
// Momentum: none (applies_momentum() is true, so the optimizer takes plain SGD steps, as the
// paper's gradient-descent iteration does).
//
// Hyper-parameters:
//   history (10)  D, the number of past parameter moves in the threshold (paper: D = 10).
//   xi (1)        ξ, with ξ_d = ξ/D (the paper's experiments: ξ_d = 1/D).
#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/simd.h"
#include "algorithms/lag_threshold.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

bool on_cpu_fp32(const at::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}

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
    previous_.clear();
    for (const auto& p : params) previous_.push_back(p.tensor.detach().clone());
  }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    if (num_params_ == 0) throw std::logic_error("lag: setup() must run before reduce_gradients");
    pending_.push_back(&bucket);
    seen_ += bucket.entries.size();
    if (seen_ < num_params_) return;
    std::sort(pending_.begin(), pending_.end(),
              [](const GradBucket* a, const GradBucket* b) { return a->index < b->index; });
    exchange(comm, ctx);
    pending_.clear();
    seen_ = 0;
  }

  // LAG is defined for plain gradient steps θ^{k+1} = θ^k − α∇^k: its trigger weighs gradient
  // changes against parameter moves, which heavy-ball momentum would inflate by up to
  // 1/(1−m)² and so silence every upload. The optimizer therefore runs without momentum.
  bool applies_momentum() const override { return true; }

  // Records ‖θ^{k+1} − θ^k‖² / η_k², the move of this step in units of its own rate (a move made
  // at a non-positive rate counts as zero).
  void after_step(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>&,
                  Communicator&, StepContext& ctx) override {
    double moved = 0;
    for (size_t i = 0; i < params.size() && i < previous_.size(); ++i) {
      const at::Tensor p = params[i].tensor.detach();
      if (on_cpu_fp32(p) && on_cpu_fp32(previous_[i]) && p.numel() == previous_[i].numel()) {
        moved += squared_distance_then_copy(p.data_ptr<float>(), previous_[i].data_ptr<float>(),
                                            p.numel());
        continue;
      }
      moved += (p - previous_[i]).to(at::kDouble).square().sum().item<double>();
      previous_[i].copy_(p);
    }
    threshold_.moved(moved, ctx.lr);
  }

  void save_state(AlgorithmState& out) const override {
    if (last_upload_.defined()) {
      out["last_upload"] = last_upload_.clone();
      out["aggregate"] = aggregate_.clone();
    }
    for (size_t i = 0; i < previous_.size(); ++i)
      out["previous." + std::to_string(i)] = previous_[i].clone();
    save_numbers(out, "moves_per_lr2", threshold_.moves());
    save_number(out, "first", first_ ? 1 : 0);
  }
  void load_state(const AlgorithmState& in) override {
    if (in.count("last_upload")) {
      last_upload_ = load_tensor(in, "last_upload").clone();
      aggregate_ = load_tensor(in, "aggregate").clone();
    }
    for (size_t i = 0; i < previous_.size(); ++i)
      previous_[i].copy_(load_tensor(in, "previous." + std::to_string(i)));
    threshold_.set_moves(load_numbers(in, "moves_per_lr2"));
    first_ = load_number(in, "first") != 0;
  }

 private:
  // (ξ/D) Σ_d ‖θ^{k+1−d} − θ^{k−d}‖² / η_{k−d}² (algorithms/lag_threshold.h).
  double threshold() const { return threshold_.value(); }

  void exchange(Communicator& comm, StepContext& ctx) {
    int64_t n = 0;
    bool cpu = true;
    for (const auto* b : pending_) {
      n += b->flat.numel();
      cpu = cpu && on_cpu_fp32(b->flat);
    }
    if (!last_upload_.defined()) {
      last_upload_ = at::zeros({n}, pending_[0]->flat.options());
      aggregate_ = at::zeros_like(last_upload_);
    }
    if (cpu && on_cpu_fp32(last_upload_) && on_cpu_fp32(aggregate_) && last_upload_.numel() == n)
      exchange_cpu(comm, ctx, n);
    else
      exchange_tensors(comm, ctx);
  }

  // The pending buckets' flats in bucket order with their offsets in last_upload_/aggregate_.
  template <class Fn>
  void for_each_bucket(Fn fn) {
    int64_t off = 0;
    for (auto* b : pending_) {
      fn(b->flat.data_ptr<float>(), off, b->flat.numel());
      off += b->flat.numel();
    }
  }

  void exchange_cpu(Communicator& comm, StepContext& ctx, int64_t n) {
    float* last = last_upload_.data_ptr<float>();
    if (!delta_.defined() || delta_.numel() != n) delta_ = at::empty({n}, at::kFloat);
    float* delta = delta_.data_ptr<float>();
    // The trigger's ‖g − g^‖². After a step that uploaded, the next one probably uploads too: its
    // pass also writes Δ = g − g^ and a copy of g into next_upload_, which becomes g^ by a swap if
    // it does upload (one pass instead of two). Otherwise it only reads. The sum is the same.
    const bool predicted = first_ || uploaded_;
    if (predicted && (!next_upload_.defined() || next_upload_.numel() != n))
      next_upload_ = at::empty({n}, at::kFloat);
    double change = 0;
    for_each_bucket([&](const float* g, int64_t off, int64_t len) {
      change += predicted
                    ? squared_distance_with_difference(g, last + off, delta + off,
                                                       next_upload_.data_ptr<float>() + off, len)
                    : squared_distance(g, last + off, len);
    });
    const bool upload = first_ || change > threshold();
    first_ = false;
    uploaded_ = upload;

    at::Tensor mine = at::empty({0}, at::kFloat);
    if (upload && predicted) {  // Δ is written; g^ ← g
      std::swap(last_upload_, next_upload_);
      mine = delta_;
    } else if (upload) {  // Δ = g − g^ (what travels) and g^ ← g, in one pass
      for_each_bucket([&](const float* g, int64_t off, int64_t len) {
        for (int64_t i = 0; i < len; ++i) {
          delta[off + i] = g[i] - last[off + i];
          last[off + i] = g[i];
        }
      });
      mine = delta_;
    }
    std::vector<at::Tensor> deltas;
    for (const at::Tensor& part : comm.allgatherv(mine)) {
      if (part.numel() == 0) continue;
      if (part.numel() != n)
        throw CommError("lag: a rank sent " + std::to_string(part.numel()) + " values, expected " +
                        std::to_string(n));
      deltas.push_back(part.to(at::kCPU, at::kFloat).contiguous());
    }
    // ∇ ← ∇ + (0 + Δ_1 + Δ_2 + ...)/P and every bucket ← ∇ in one pass, chunk by chunk: the fp32
    // operations of the tensor expressions, in their order. For P a power of two the division is a
    // multiplication by 1/P, which rounds the same exact quotient.
    float* aggregate = aggregate_.data_ptr<float>();
    const int ranks = comm.size();
    const bool power_of_two = (ranks & (ranks - 1)) == 0;
    const float divisor = static_cast<float>(ranks), inverse = 1.0f / divisor;
    for_each_bucket([&](float* flat, int64_t off, int64_t len) {
      float sum[kChunk];
      for (int64_t c0 = 0; c0 < len; c0 += kChunk) {
        const int64_t m = std::min(kChunk, len - c0);
        std::fill(sum, sum + m, 0.0f);
        for (const at::Tensor& d : deltas) {
          const float* dp = d.data_ptr<float>() + off + c0;
          for (int64_t i = 0; i < m; ++i) sum[i] += dp[i];
        }
        float* a = aggregate + off + c0;
        float* f = flat + c0;
        if (power_of_two) {
          for (int64_t i = 0; i < m; ++i) f[i] = a[i] += sum[i] * inverse;
        } else {
          for (int64_t i = 0; i < m; ++i) f[i] = a[i] += sum[i] / divisor;
        }
      }
    });
    record(ctx, static_cast<int64_t>(deltas.size()), upload, change);
  }

  void record(StepContext& ctx, int64_t uploads, bool upload, double change) const {
    ctx.stats["uploads"] = static_cast<double>(uploads);
    ctx.stats["lag_uploaded"] = upload ? 1.0 : 0.0;
    ctx.stats["lag_threshold"] = threshold();
    ctx.stats["lag_change"] = change;
  }

  // exchange_cpu with LibTorch operations, for tensors on another device.
  void exchange_tensors(Communicator& comm, StepContext& ctx) {
    std::vector<at::Tensor> flats;
    for (const auto* b : pending_) flats.push_back(b->flat);
    at::Tensor g = at::cat(flats);
    at::Tensor delta = g - last_upload_;
    const double change = delta.to(at::kDouble).square().sum().item<double>();
    const bool upload = first_ || change > threshold();
    first_ = false;

    std::vector<at::Tensor> parts = comm.allgatherv(upload ? delta : at::empty({0}, g.options()));
    at::Tensor sum = at::zeros_like(g);
    int64_t uploads = 0;
    for (const auto& part : parts) {
      if (part.numel() == 0) continue;
      sum.add_(part.to(g.device()));
      ++uploads;
    }
    aggregate_.add_(sum.div_(static_cast<double>(comm.size())));
    if (upload) last_upload_.copy_(g);

    int64_t off = 0;
    for (auto* b : pending_) {
      b->flat.copy_(aggregate_.narrow(0, off, b->flat.numel()));
      off += b->flat.numel();
    }
    record(ctx, uploads, upload, change);
  }

  LagParams p_;
  size_t num_params_ = 0;
  size_t seen_ = 0;
  bool first_ = true;
  std::vector<GradBucket*> pending_;
  at::Tensor last_upload_;  // ∇_m(θ^_m), all buckets concatenated in bucket order
  at::Tensor aggregate_;    // ∇^k (the average), same layout
  at::Tensor delta_;        // this rank's upload (CPU), reused from step to step
  at::Tensor next_upload_;  // g, copied by a predicted upload's trigger pass (CPU); swapped in
  bool uploaded_ = false;   // whether the last step uploaded (the prediction for this one)
  std::vector<at::Tensor> previous_;  // θ^k, to measure the next move
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
