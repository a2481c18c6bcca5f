// Top-k sparsification with error feedback.
// Paper: S. U. Stich, J.-B. Cordonnier, M. Jaggi, "Sparsified SGD with Memory", NeurIPS 2018.
//
// Rule, per gradient tensor of d coordinates on every worker (memory e, starts at 0):
//   p  = g + e                      (the paper's m_t + η·g_t, kept here in gradient units)
//   s  = top_k(p)                   (the k = ⌈ratio·d⌉ coordinates of largest |p_i|, exact;
//                                    equal magnitudes at the k-th: the lower index first)
//   e' = p − s                      (error feedback: what was not sent is kept)
// then the workers' s are averaged and the optimizer applies the average. With error_feedback
// off, s = top_k(g) and nothing is kept (plain top-k sparsification).
// The memory is rescaled by η_old/η_new when the learning rate changes, so that it equals the
// paper's η-scaled memory (see rescale_memory_for_lr in sparse_exchange.h).
//
// Selection: a sampled floor, one pass collecting the coordinates above it, then a cut to exactly
// k (codecs/magnitude_topk.h, which states the rule with its ties and NaNs). No sort of d.
//
// Exchange: each rank's k (index, value) pairs of every tensor of a bucket in ONE allgather
// (k is fixed by d, so no size exchange is needed): 8·Σ_i k_i payload bytes per bucket.
//
// Scope (GRACE issue #9: per layer or over the whole model; Dutta et al., AAAI 2020, Sec. 4):
//   layer   the rule above per tensor, k_i = ⌈ratio·d_i⌉ (the default, and the paper's per-vector
//           rule applied to each layer).
//   global  the rule above once over the concatenation of all the model's gradients (N values, in
//           bucket order): k = ⌈ratio·N⌉ largest magnitudes model-wide, so a layer of large
//           gradients may send many and another none; one memory for the concatenation. The
//           model must be in one gradient bucket (train.bucket_mb at least its fp32 size; a
//           smaller one is refused at the first step). Indices address the concatenation:
//           8·⌈ratio·N⌉ payload bytes per step, one allgather.
//
// Hyper-parameters:
//   ratio           fraction of coordinates sent, k = ⌈ratio·d⌉ of each tensor (layer) or of the
//                   model (global)                                            (default 0.01)
//   error_feedback  keep the unsent remainder in a memory                     (default true)
//   scope           layer or global                                           (default layer)
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/topk_codec.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"

namespace cedar {

namespace {

struct TopKParams {
  double ratio = 0.01;
  bool error_feedback = true;
  std::string scope = "layer";
  template <class V>
  void visit(V& v) {
    v("ratio", ratio,
      "fraction of the coordinates sent (largest magnitudes), k = ceil(ratio*d) of each tensor "
      "(scope: layer) or of the whole model (scope: global)",
      keep_ratio_bound());
    v("error_feedback", error_feedback, "add the unsent remainder to the next gradient (memory)");
    v("scope", scope,
      "layer: the top k = ceil(ratio*d) of each tensor; global: the top k = ceil(ratio*N) of the "
      "whole model (N values; the model in one bucket, train.bucket_mb)",
      sparsifier_scope_bound());
  }
};

class TopK final : public Algorithm {
 public:
  explicit TopK(const TopKParams& p)
      : params_(p), global_(p.scope == "global"), compressor_(p.ratio) {}

  void setup(const std::vector<NamedTensor>& params, Communicator&) override {
    model_numel_ = 0;
    for (const auto& p : params) model_numel_ += p.tensor.numel();
  }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    // scope: global selects over one tensor that is the whole bucket (which holds the model).
    GradBucket whole = global_ ? whole_model_bucket(bucket, model_numel_, "topk") : GradBucket{};
    GradBucket& b = global_ ? whole : bucket;
    if (params_.error_feedback) memory_.rescale(b, ctx.lr);
    // Top-k draws nothing at random; the generator only satisfies the Compressor interface.
    at::Generator gen = make_generator(ctx.seed, comm.rank(), ctx.step, b.index);
    ExchangeResult r = exchange_compressed(
        b, comm, compressor_, params_.error_feedback ? &memory_.memory() : nullptr, gen);
    ctx.stats["topk.payload_bytes"] += static_cast<double>(r.payload_bytes);
  }

  void save_state(AlgorithmState& out) const override { memory_.save(out); }
  void load_state(const AlgorithmState& in) override { memory_.load(in); }

 private:
  TopKParams params_;
  const bool global_;
  int64_t model_numel_ = 0;  // from setup(); 0 before it
  TopKCompressor compressor_;
  LrScaledMemory memory_;
};

}  // namespace

AlgorithmInfo topk_algorithm() {
  AlgorithmInfo info = algorithm_info<TopK, TopKParams>(
      "topk",
      "top-k sparsification with error feedback: send the k largest |g+e| per tensor (scope: "
      "layer) or over the whole model (scope: global), keep the rest",
      "Stich, Cordonnier, Jaggi. Sparsified SGD with Memory. NeurIPS 2018");
  info.device_independent = true;
  info.codec = "topk";
  info.lossless = {{"{ratio: 1}", 0}, {"{ratio: 1, scope: global}", 0}};
  return info;
}

}  // namespace cedar
