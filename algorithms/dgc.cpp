// Deep Gradient Compression.
// Paper: Y. Lin, S. Han, H. Mao, Y. Wang, W. J. Dally, "Deep Gradient Compression: Reducing the
// Communication Bandwidth for Distributed Training", ICLR 2018. Reference code:
// github.com/synxlin/deep-gradient-compression (dgc/compression.py, dgc/memory.py).
//
// Per sparsified tensor on every worker (u momentum, v accumulated velocity, both start at 0):
//   clip:      g ← g·min(1, T/‖g‖),  T = clip_norm·P^(−1/2)   (local gradient clipping; 0 = off)
//   momentum:  u ← m·u + g;  v ← v + u                          (momentum correction)
//              (nesterov: u ← m·(u + g);  v ← v + u + g, as the reference code)
//   select:    S ⊇ top-k(|v|), k = ⌈density·d⌉, found by a sampled threshold (below)
//   send:      (index, value) pairs of v at S — one allgatherv per bucket
//   mask:      v_S ← 0;  u_S ← 0                                (momentum factor masking)
//   update:    every rank adds all ranks' pairs, each value scaled by 1/P (the average of the
//              ranks' sparse vectors); the optimizer then runs plain SGD (+ weight decay) on
//              it: DGC applies momentum itself (applies_momentum()).
// Tensors of dimension ≤ 1 (biases, batch norm), as in the reference code, and tensors with
// fewer than min_sparse_numel elements are allreduce-averaged dense; momentum u ← m·u + ḡ is
// applied to the average (clipped at clip_norm, unscaled: it is already aggregated).
//
// Warm-up (exponentially increasing sparsity): in epoch e < warmup_epochs the density is
// max(warmup_density^(e+1), 1 − sparsity): 75%, 93.75%, 98.4375%, 99.6%, then 99.9% with the
// defaults (the paper's schedule, 4 warm-up epochs; the reference's wm5 config prints the same
// list for 5 warm-up epochs, the 5th already at 99.9%).
//
// Threshold by sampling (no full sort): |v| is sampled at an odd stride from a random start so
// that max(sample_ratio·d, 2/density) samples are taken; the threshold is the smallest of the
// sample's top ⌈density·#samples⌉ (torch::topk on the sample only) — taken two standard
// deviations deeper into the sample, so that one pass usually keeps at least k; S = {i : |v_i| ≥
// threshold}.
// While |S| < k the threshold is multiplied by lower_bound (at most max_adaptation_iters
// times; then an exact top-k of |v| as a last resort) — so S always contains the exact top-k.
// If |S| > upper_bound·k, the threshold is raised to the k-th largest |v| among S (torch::topk
// on the candidates only: the paper's hierarchical selection), leaving exactly k. Hence
// k ≤ |S| ≤ upper_bound·k. Tensors no larger than the sample take the exact top-k directly.
// codecs/dgc_select.h implements this selection.
//
// Bytes per bucket: sparse tensors — one allgatherv of 8·Σ|S_i| bytes (int32 index into the
// bucket's joint index space of its sparse tensors + fp32 value, sparse_exchange.h) plus its
// 8-byte count; dense tensors — one allreduce of 4·Σ d_i bytes.
//
// Hyper-parameters (defaults from the paper / reference code):
//   sparsity              final fraction of coordinates not sent                       0.999
//   momentum              momentum m of the correction                                 0.9
//   nesterov              Nesterov form of the correction                              false
//   momentum_masking      zero u at sent coordinates (v is always zeroed there)        true
//   warmup_epochs         epochs of exponentially increasing sparsity                  4
//   warmup_density        density of the first warm-up epoch; ×itself per epoch        0.25
//   clip_norm             local clipping threshold before P^(−1/2) scaling, 0 = off    0 (ref.)
//   sample_ratio          fraction of |v| sampled for the threshold                    0.01
//   upper_bound           re-select when more than upper_bound·k survive               1.3
//   lower_bound           threshold factor while fewer than k survive                  0.8
//   max_adaptation_iters  threshold lowerings before the exact fallback                10
//   min_sparse_numel      tensors with fewer elements are sent dense                   0
// Weight decay stays in the optimizer, applied to the averaged update with a momentum buffer of
// its own at DGC's momentum m (weight_decay_momentum()), as the reference optimizer does:
//   c ← m·c + wd·w;  w ← w − lr·(update + c)
// so the weight-decay term gets the momentum dense SGD gives it (b ← m·b + g + wd·w is linear).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/dgc_select.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

Bound open_unit(bool hi_open) {
  Bound b = in_range(0, 1, hi_open);
  b.lo_open = true;
  return b;
}

struct DgcParams {
  double sparsity = 0.999;
  double momentum = 0.9;
  bool nesterov = false;
  bool momentum_masking = true;
  int64_t warmup_epochs = 4;
  double warmup_density = 0.25;
  double clip_norm = 0;
  double sample_ratio = 0.01;
  double upper_bound = 1.3;
  double lower_bound = 0.8;
  int64_t max_adaptation_iters = 10;
  int64_t min_sparse_numel = 0;
  template <class V>
  void visit(V& v) {
    v("sparsity", sparsity, "final fraction of each gradient's coordinates not sent",
      in_range(0, 1, true));
    v("momentum", momentum, "momentum of the momentum correction (u = m*u + g; v = v + u)",
      in_range(0, 1, true));
    v("nesterov", nesterov, "Nesterov form of the momentum correction");
    v("momentum_masking", momentum_masking, "zero the momentum u at the sent coordinates");
    v("warmup_epochs", warmup_epochs, "epochs over which the sparsity rises exponentially",
      at_least(0));
    v("warmup_density", warmup_density,
      "density of the first warm-up epoch; each further warm-up epoch multiplies it again",
      open_unit(false));
    v("clip_norm", clip_norm, "local gradient clipping threshold, scaled by P^-1/2 (0: off)",
      at_least(0));
    v("sample_ratio", sample_ratio, "fraction of |v| sampled to estimate the top-k threshold",
      in_range(0.001, 1));
    v("upper_bound", upper_bound, "re-select the exact top-k when more than upper_bound*k survive",
      at_least(1));
    v("lower_bound", lower_bound, "threshold factor applied while fewer than k survive",
      open_unit(true));
    v("max_adaptation_iters", max_adaptation_iters,
      "threshold lowerings before falling back to an exact top-k", at_least(0));
    v("min_sparse_numel", min_sparse_numel,
      "tensors with fewer elements are allreduced dense (besides all tensors of dim <= 1)",
      at_least(0));
  }
};

class Dgc final : public Algorithm {
 public:
  explicit Dgc(const DgcParams& p) : p_(p) {}
  bool applies_momentum() const override { return true; }
  double own_momentum() const override { return p_.momentum; }
  double weight_decay_momentum() const override { return p_.momentum; }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    const double density = current_density(ctx.epoch);
    ctx.stats["dgc.sparsity"] = 1.0 - density;
    std::vector<GradEntry*> dense, sparse;
    for (auto& e : bucket.entries) {
      bool small = e.grad.dim() <= 1 || e.grad.numel() < p_.min_sparse_numel;
      (small ? dense : sparse).push_back(&e);
    }
    if (!dense.empty()) reduce_dense(dense, comm);
    if (!sparse.empty()) reduce_sparse(bucket.index, sparse, comm, ctx, density);
  }

 private:
  struct SparseState {
    at::Tensor u, v;
  };

  void save_state(AlgorithmState& out) const override {
    for (const auto& [name, s] : state_) {
      out["u." + name] = s.u.detach().clone();
      out["v." + name] = s.v.detach().clone();
    }
    save_tensor_map(out, "dense_u.", dense_u_);
  }
  void load_state(const AlgorithmState& in) override {
    std::map<std::string, at::Tensor> u, v;
    load_tensor_map(in, "u.", u);
    load_tensor_map(in, "v.", v);
    state_.clear();
    for (auto& [name, t] : u) state_[name] = SparseState{t, v.at(name)};
    load_tensor_map(in, "dense_u.", dense_u_);
  }

  double current_density(int64_t epoch) const {
    const double final_density = 1.0 - p_.sparsity;
    if (epoch < 0 || epoch >= p_.warmup_epochs) return final_density;
    return std::max(final_density, std::pow(p_.warmup_density, static_cast<double>(epoch + 1)));
  }

  void momentum_step(at::Tensor& u, const at::Tensor& g, double g_scale) const {
    if (p_.nesterov) {
      u.add_(g, g_scale).mul_(p_.momentum);
    } else if (g_scale == 1.0) {
      at::add_out(u, g, u, p_.momentum);  // u = g + m·u in one pass
    } else {
      u.mul_(p_.momentum).add_(g, g_scale);
    }
  }

  // Clipping factor min(1, threshold/‖g‖).
  static double clip_scale(const at::Tensor& g, double threshold) {
    if (threshold <= 0) return 1.0;
    double norm = g.norm().item<double>();
    return norm > threshold ? threshold / norm : 1.0;
  }

  void reduce_dense(const std::vector<GradEntry*>& entries, Communicator& comm) {
    std::vector<at::Tensor> flats;
    for (auto* e : entries) flats.push_back(e->grad.reshape({-1}));
    at::Tensor packed = at::cat(flats);
    comm.allreduce_sum(packed);
    if (comm.size() > 1) packed.div_(comm.size());
    int64_t off = 0;
    for (auto* e : entries) {
      const int64_t n = e->grad.numel();
      at::Tensor g = packed.narrow(0, off, n);
      off += n;
      at::Tensor& u = dense_u_[e->name];
      if (!u.defined()) u = at::zeros({n}, g.options());
      const double scale = clip_scale(g, p_.clip_norm);
      momentum_step(u, g, scale);
      at::Tensor out = p_.nesterov ? u + g * scale : u;
      e->grad.copy_(out.view(e->grad.sizes()));
    }
  }

  // Indices (int64, ascending) of a superset of the exact top-k of |v| with at most
  // upper_bound·k elements (see the header comment; codecs/dgc_select.h).
  at::Tensor select(const at::Tensor& v, int64_t k, double density, at::Generator& gen) const {
    return dgc_select(v, k, density, p_.sample_ratio, p_.lower_bound, p_.upper_bound,
                      p_.max_adaptation_iters, gen);
  }

  void reduce_sparse(int64_t bucket_index, const std::vector<GradEntry*>& entries,
                     Communicator& comm, StepContext& ctx, double density) {
    const double clip_threshold = p_.clip_norm / std::sqrt(static_cast<double>(comm.size()));
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(bucket_index));
    std::vector<at::Tensor> all_idx, all_val;
    int64_t space = 0, selected = 0, target = 0;
    for (auto* e : entries) {
      const int64_t n = e->grad.numel();
      at::Tensor g = e->grad.reshape({-1});
      SparseState& s = state_[e->name];
      if (!s.u.defined()) {
        s.u = at::zeros({n}, g.options());
        s.v = at::zeros({n}, g.options());
      }
      const double scale = clip_scale(g, clip_threshold);
      momentum_step(s.u, g, scale);
      s.v.add_(s.u);
      if (p_.nesterov) s.v.add_(g, scale);
      const int64_t k = keep_count(n, density);
      at::Tensor idx = select(s.v, k, density, gen);
      all_val.push_back(s.v.index_select(0, idx));
      s.v.index_fill_(0, idx, 0);
      if (p_.momentum_masking) s.u.index_fill_(0, idx, 0);
      all_idx.push_back(idx + space);
      space += n;
      selected += idx.numel();
      target += k;
    }
    if (space > std::numeric_limits<int32_t>::max())
      throw std::invalid_argument("dgc: a bucket's sparse tensors exceed 2^31 elements");
    at::Tensor payload = encode_sparse(at::cat(all_idx), at::cat(all_val));
    std::vector<at::Tensor> segments;
    for (auto* e : entries) {
      if (!e->grad.is_contiguous())
        throw std::invalid_argument("dgc: the gradient of " + e->name + " is not contiguous");
      segments.push_back(e->grad.view({-1}).zero_());
    }
    const double inv_p = 1.0 / comm.size();
    for (const SparseView& r : allgather_sparse(payload, comm))
      scatter_add_segments(r, segments, inv_p);
    ctx.stats["dgc.selected"] += static_cast<double>(selected);
    ctx.stats["dgc.k"] += static_cast<double>(target);
    ctx.stats["dgc.payload_bytes"] += static_cast<double>(payload.numel());
  }

  DgcParams p_;
  std::map<std::string, SparseState> state_;
  std::map<std::string, at::Tensor> dense_u_;
};

}  // namespace

AlgorithmInfo dgc_algorithm() {
  AlgorithmInfo info = algorithm_info<Dgc, DgcParams>(
      "dgc",
      "Deep Gradient Compression: momentum correction, factor masking, local clipping, sparsity "
      "warm-up, sampled top-k threshold, sparse allgather",
      "Lin, Han, Mao, Wang, Dally. Deep Gradient Compression. ICLR 2018");
  // Full density with its momentum equal to the optimizer's, the weight-decay term given that
  // momentum too; masking off (masking at full density zeroes u every step: the paper's design,
  // not dense SGD). The sums differ in order only (measured on 2 ranks: 5e-8 to 2e-7).
  info.lossless = {
      {"{sparsity: 0, warmup_epochs: 0, momentum_masking: false, momentum: 0.9, clip_norm: 0}",
       1e-4}};
  return info;
}

}  // namespace cedar
