// gTop-k: global top-k sparsification with error feedback.
// Paper: S. Shi, X. Chu, K. C. Cheung, S. See, "A Distributed Synchronous SGD Algorithm with
// Global Top-k Sparsification for Low Bandwidth Networks", ICDCS 2019 (arXiv:1901.04359).
// Reference code: github.com/hclhkbu/gtopkssgd (allreducer.py, compression.py).
//
// Rule, per gradient tensor of d coordinates on every worker p (residual e_p, starts at 0; the
// paper's gTop-k S-SGD algorithm):
//   G     = g_p + e_p                     (gradient units, as the paper: no learning-rate scaling)
//   L     = top_k(G), k = ⌈density·d⌉     (local selection, codecs/magnitude_topk.h: exact,
//                                          equal magnitudes lower index first)
//   S     = gTopKAllReduce(L)             (the global top-k of the P local sets, merged by
//                                          recursive doubling: exchange/global_topk.h)
//   update = S / P                        (every rank the same; the optimizer applies it)
//   e_p'  = G − G ⊙ delivered_p           (error feedback)
// The paper keeps G ⊙ ¬Mask (what was not selected locally) and adds back G̃ ⊙ ¬gMask (local
// selections whose index is not in the global set). Here delivered_p marks the local selections
// whose own value is part of S: their index survived every merge on this rank's path. This is the
// paper's rule wherever no index that a merge dropped comes back later from another block's set;
// where one does, the paper's mask would count the value as applied although S holds only the
// other block's sum there, and it would be lost. With delivered_p nothing is lost:
//   P·update + Σ_p (e_p' − e_p) = Σ_p g_p   (up to rounding), every step.
// Selection per tensor, as Cedar's top-k (the reference code selects over all layers fused into
// one buffer), so that the result does not depend on how the trainer buckets the gradients.
// Gradients off the CPU stay there: G, the residual and the update live on their device, the local
// top-k is selected there by the same rule (magnitude_topk_indices), and only the k selected pairs
// and the merged set (O(k)) visit the host, where the merges run.
// Momentum: plain, as Cedar's top-k and the reference code (PyTorch SGD on the sparse average):
// the optimizer's momentum applies to the update; no momentum correction.
//
// Wire format (exchange/global_topk.h): per bucket, one message per round of K = Σ_i k_i
// (int32 index, fp32 value) pairs over the bucket's tensors, [K indices][K values], 8·K bytes.
// On P ranks, P' the largest power of two <= P, per bucket:
//   rank r < P':   log2 P' sendrecv of 8·K bytes; where r + P' < P also one recv of 8·K bytes
//                  (r + P''s set, folded in first) and one send of 9·K bytes back to r + P'
//                  (the result and K delivery flags)
//   rank r >= P':  one send of 8·K bytes to r − P' and one recv of 9·K bytes
// O(K·log P) per rank, against top-k's allgather, in which every rank receives (P − 1)·8·K.
//
// Density: the paper's experiments use ρ = 0.001 (k = 0.001·d; the reference code's README and
// its script gtopk_mpi.sh). Warm-up: the reference code sends density 0.004 in the first epoch
// ("the tuned one", allreducer.py), then ρ; here max(density, warmup_density) in each of the
// first warmup_epochs epochs.
//
// Hyper-parameters:
//   density         fraction of each tensor's coordinates in the global set    (default 0.001)
//   warmup_epochs   epochs at warmup_density before density                    (default 1)
//   warmup_density  density of the warm-up epochs (if larger)                  (default 0.004)
#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/magnitude_topk.h"
#include "algorithms/exchange/global_topk.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct GTopKParams {
  double density = 0.001;
  int64_t warmup_epochs = 1;
  double warmup_density = 0.004;
  template <class V>
  void visit(V& v) {
    v("density", density,
      "fraction of each tensor's coordinates in the global top-k set, k = ceil(density*d) "
      "(paper: 0.001)",
      keep_ratio_bound());
    v("warmup_epochs", warmup_epochs,
      "first epochs sent at max(density, warmup_density) (reference code: 1)", at_least(0));
    v("warmup_density", warmup_density, "density of the warm-up epochs (reference code: 0.004)",
      keep_ratio_bound());
  }
};

class GTopK final : public Algorithm {
 public:
  explicit GTopK(const GTopKParams& p) : p_(p) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    const double density =
        ctx.epoch < p_.warmup_epochs ? std::max(p_.density, p_.warmup_density) : p_.density;
    ctx.stats["gtopk.density"] = density;
    // G = g + e per tensor and its local top-k, where the gradients are.
    SparseSegments local;
    std::vector<at::Tensor> sum;
    for (const auto& e : bucket.entries) {
      const int64_t d = e.grad.numel();
      const at::Device home = e.grad.device();
      at::Tensor& res = residual_[e.name];
      if (!res.defined() || res.numel() != d) res = at::zeros({d}, at::kFloat);
      if (res.device() != home) res = res.to(home);
      if (home.is_cpu()) {
        // G = e + g in the residual's own storage (the same IEEE sums as g + e): no fresh
        // full-size tensor, whose pages would fault in on every step.
        res.add_(e.grad.detach().to(at::kFloat).reshape({-1}));
        sum.push_back(res);
      } else {
        sum.push_back(e.grad.detach().to(at::kFloat).reshape({-1}) + res);
      }
      const int64_t k = keep_count(d, density);
      const int64_t off = local.total();
      local.numel.push_back(d);
      local.count.push_back(k);
      local.index.resize(static_cast<size_t>(off + k));
      local.value.resize(static_cast<size_t>(off + k));
      if (home.is_cpu()) {
        topk_.select(sum.back().data_ptr<float>(), d, k, local.index.data() + off,
                     local.value.data() + off);
      } else {  // the k pairs come to the host for the merges
        const at::Tensor idx = magnitude_topk_indices(sum.back(), k);
        const at::Tensor i32 = idx.to(at::kCPU, at::kInt).contiguous();
        const at::Tensor val = sum.back().index_select(0, idx).cpu().contiguous();
        std::copy_n(i32.data_ptr<int32_t>(), k, local.index.data() + off);
        std::copy_n(val.data_ptr<float>(), k, local.value.data() + off);
      }
    }
    const GlobalTopK g = global_topk_allreduce(local, comm, scratch_);
    ctx.stats["gtopk.payload_bytes"] += static_cast<double>(g.bytes_sent);
    int64_t off = 0;
    for (size_t i = 0; i < bucket.entries.size(); ++i) {
      GradEntry& e = bucket.entries[i];
      const int64_t k = local.count[i];
      if (!sum[i].is_cpu()) {
        reduce_on_device(local, g, off, k, comm.size(), sum[i], e);
        residual_[e.name] = sum[i];
        off += k;
        continue;
      }
      // e' = G with this rank's delivered values taken out (in place: sum[i] is the residual).
      float* r = sum[i].data_ptr<float>();
      for (int64_t j = off; j < off + k; ++j)
        if (g.delivered[static_cast<size_t>(j)]) r[local.index[static_cast<size_t>(j)]] = 0;
      // The update: the global set divided by P, written into the gradient at its indices (an
      // IEEE division of each value, as dividing the whole zero-filled update would do).
      // A gradient of another precision gets the fp32 update through a copy.
      const bool direct = e.grad.scalar_type() == at::kFloat && e.grad.is_contiguous();
      at::Tensor u = direct ? e.grad.view({-1}) : at::empty({local.numel[i]}, at::kFloat);
      u.zero_();
      float* w = u.data_ptr<float>();
      const float ranks = static_cast<float>(comm.size());
      for (int64_t j = off; j < off + k; ++j) {
        const float v = g.global.value[static_cast<size_t>(j)];
        w[g.global.index[static_cast<size_t>(j)]] = comm.size() > 1 ? v / ranks : v;
      }
      if (!direct) e.grad.copy_(u.view(e.grad.sizes()));
      off += k;
    }
  }

  void save_state(AlgorithmState& out) const override {
    save_tensor_map(out, "residual.", residual_);
  }
  void load_state(const AlgorithmState& in) override {
    load_tensor_map(in, "residual.", residual_);
  }

 private:
  // For tensor `sum` (G on its device) at pairs [off, off + k) of `local`: G's delivered values
  // set to 0 (the residual), and the update S/P written to e.grad, as the CPU loops do.
  static void reduce_on_device(const SparseSegments& local, const GlobalTopK& g, int64_t off,
                               int64_t k, int ranks, at::Tensor& sum, GradEntry& e) {
    std::vector<int64_t> delivered, index;
    std::vector<float> value;
    for (int64_t j = off; j < off + k; ++j) {
      const size_t q = static_cast<size_t>(j);
      if (g.delivered[q]) delivered.push_back(local.index[q]);
      index.push_back(g.global.index[q]);
      value.push_back(g.global.value[q]);
    }
    const at::Device home = sum.device();
    if (!delivered.empty()) sum.index_fill_(0, at::tensor(delivered, at::kLong).to(home), 0.0);
    at::Tensor u = at::zeros({sum.numel()}, sum.options());
    if (k) u.index_put_({at::tensor(index, at::kLong).to(home)}, at::tensor(value).to(home));
    if (ranks > 1) u.div_(ranks);
    e.grad.copy_(u.view(e.grad.sizes()));
  }

  GTopKParams p_;
  std::map<std::string, at::Tensor> residual_;  // e per tensor name, 1-D fp32 on the CPU
  MagnitudeTopK topk_;
  MergeScratch scratch_;
};

}  // namespace

AlgorithmInfo gtopk_algorithm() {
  AlgorithmInfo info = algorithm_info<GTopK, GTopKParams>(
      "gtopk",
      "global top-k sparsification: local top-k of g+e merged by recursive doubling into the "
      "global top-k, O(k log P) bytes per rank; error feedback",
      "Shi, Chu, Cheung, See. A Distributed Synchronous SGD Algorithm with Global Top-k "
      "Sparsification for Low Bandwidth Networks. ICDCS 2019");
  // Full density: the global set is every coordinate, its values the sums of the ranks' (on 2
  // ranks the one sum a dense allreduce makes).
  info.lossless = {{"{density: 1, warmup_epochs: 0}", 0}};
  return info;
}

}  // namespace cedar
