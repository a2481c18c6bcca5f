// Random-k sparsification with error feedback.
// Paper: S. U. Stich, J.-B. Cordonnier, M. Jaggi, "Sparsified SGD with Memory", NeurIPS 2018
// (rand_k, the random counterpart of top_k in the same analysis).
//
// Rule, per gradient tensor of d coordinates (memory e, starts at 0):
//   p  = g + e;   S = k = ⌈ratio·d⌉ distinct coordinates drawn uniformly at random;
//   s  = p restricted to S;   e' = p − s   (error feedback; off: s = g restricted to S, no memory)
// The workers' s are averaged and the optimizer applies the average. The memory is rescaled by
// η_old/η_new when the learning rate changes (the paper keeps it in units of η·g; see
// rescale_memory_for_lr in sparse_exchange.h).
//
// Randomness: S comes from make_generator(seed, r, step, bucket index) and is drawn tensor by
// tensor in bucket order, so a run is reproducible from (config, seed, world size). Each tensor
// takes one 64-bit key from the generator (draw_key) and S is that key's uniform subset
// (codecs/random_subset.h: Floyd's algorithm over a bitmap with Lemire's unbiased integers from
// the counter-based words, O(k + d/64), indices ascending). This sampler replaced a permutation
// of all d coordinates (at::randperm of the same generator): runs recorded with that one drew
// other, equally distributed sets from the same seeds.
//   shared_indices: true (default) — r = 0 on every rank, so all ranks draw the SAME S. Only the
//     k values travel, and since they sit at the same coordinates they are summed with one
//     allreduce per bucket: 4·Σ_i k_i payload bytes per bucket (the GRACE convention).
//   shared_indices: false — r = the rank, independent S per rank; (index, value) pairs travel in
//     one allgather per bucket: 8·Σ_i k_i payload bytes per bucket.
//
// Scope (GRACE issue #9: per layer or over the whole model):
//   layer   the rule above per tensor, k_i = ⌈ratio·d_i⌉ (the default).
//   global  the rule above once over the concatenation of all the model's gradients (N values, in
//           bucket order): k = ⌈ratio·N⌉ coordinates drawn uniformly model-wide (one key), one
//           memory for the concatenation. The model must be in one gradient bucket
//           (train.bucket_mb at least its fp32 size; a smaller one is refused at the first step):
//           4·⌈ratio·N⌉ payload bytes per step with shared indices, 8·⌈ratio·N⌉ without.
//
// Hyper-parameters:
//   ratio           fraction of coordinates sent, k = ⌈ratio·d⌉ of each tensor (layer) or of the
//                   model (global)                                            (default 0.01)
//   error_feedback  keep the unsent remainder in a memory                     (default true)
//   shared_indices  all ranks draw the same coordinates (values-only allreduce) (default true)
//   scope           layer or global                                           (default layer)
#include <ATen/ATen.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/randomk_codec.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/error_feedback.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"

namespace cedar {

namespace {

struct RandomKParams {
  double ratio = 0.01;
  bool error_feedback = true;
  bool shared_indices = true;
  std::string scope = "layer";
  template <class V>
  void visit(V& v) {
    v("ratio", ratio,
      "fraction of the coordinates sent (uniformly random), k = ceil(ratio*d) of each tensor "
      "(scope: layer) or of the whole model (scope: global)",
      keep_ratio_bound());
    v("error_feedback", error_feedback, "add the unsent remainder to the next gradient (memory)");
    v("shared_indices", shared_indices,
      "all ranks draw the same coordinates from the run seed and send values only (allreduce)");
    v("scope", scope,
      "layer: k = ceil(ratio*d) random coordinates of each tensor; global: k = ceil(ratio*N) of "
      "the whole model (N values; the model in one bucket, train.bucket_mb)",
      sparsifier_scope_bound());
  }
};

class RandomK final : public Algorithm {
 public:
  explicit RandomK(const RandomKParams& p)
      : params_(p),
        global_(p.scope == "global"),
        compressor_(p.ratio, /*values_only=*/p.shared_indices) {}

  void setup(const std::vector<NamedTensor>& params, Communicator&) override {
    model_numel_ = 0;
    for (const auto& p : params) model_numel_ += p.tensor.numel();
  }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    // scope: global draws over one tensor that is the whole bucket (which holds the model).
    if (global_) {
      GradBucket whole = whole_model_bucket(bucket, model_numel_, "randomk");
      reduce_scoped(whole, comm, ctx);
    } else {
      reduce_scoped(bucket, comm, ctx);
    }
  }

  void save_state(AlgorithmState& out) const override { memory_.save(out); }
  void load_state(const AlgorithmState& in) override { memory_.load(in); }

 private:
  // The rule above for each entry of `bucket`.
  void reduce_scoped(GradBucket& bucket, Communicator& comm, StepContext& ctx) {
    ErrorFeedback* memory = params_.error_feedback ? &memory_.memory() : nullptr;
    if (memory) memory_.rescale(bucket, ctx.lr);
    const int stream_rank = params_.shared_indices ? 0 : comm.rank();
    at::Generator gen = make_generator(ctx.seed, stream_rank, ctx.step, bucket.index);
    int64_t bytes = 0;
    if (params_.shared_indices) {
      bytes = reduce_shared(bucket, comm, memory, gen);
    } else {
      bytes = exchange_compressed(bucket, comm, compressor_, memory, gen).payload_bytes;
    }
    ctx.stats["randomk.payload_bytes"] += static_cast<double>(bytes);
  }

  // Same coordinates on every rank: allreduce the values, average, scatter.
  int64_t reduce_shared(GradBucket& bucket, Communicator& comm, ErrorFeedback* memory,
                        at::Generator& gen) {
    std::vector<at::Tensor> values, indices;
    for (auto& e : bucket.entries) {
      at::Tensor g = e.grad.reshape({-1});
      at::Tensor payload =
          memory ? memory->compress(e.name, g, compressor_, gen) : compressor_.compress(g, gen);
      values.push_back(payload.is_cpu() ? from_bytes(payload, at::kFloat)
                                        : generic::reinterpret(payload, at::kFloat));
      indices.push_back(compressor_.last_indices());
    }
    at::Tensor sum = at::cat(values).to(comm.device());  // made where the gradients are
    comm.allreduce_sum(sum);
    if (comm.size() > 1) sum.div_(comm.size());
    int64_t off = 0;
    for (size_t i = 0; i < bucket.entries.size(); ++i) {
      at::Tensor flat = bucket.entries[i].grad.view({-1});
      const int64_t k = indices[i].numel();
      flat.zero_();
      flat.index_put_({indices[i].to(flat.device())}, sum.narrow(0, off, k).to(flat.device()));
      off += k;
    }
    return 4 * sum.numel();
  }

  RandomKParams params_;
  const bool global_;
  int64_t model_numel_ = 0;  // from setup(); 0 before it
  RandomKCompressor compressor_;
  LrScaledMemory memory_;
};

}  // namespace

AlgorithmInfo randomk_algorithm() {
  AlgorithmInfo info = algorithm_info<RandomK, RandomKParams>(
      "randomk",
      "random-k sparsification with error feedback: send k random coordinates of g+e per tensor "
      "(scope: layer) or over the whole model (scope: global)",
      "Stich, Cordonnier, Jaggi. Sparsified SGD with Memory. NeurIPS 2018");
  info.device_independent = true;  // the index sets are drawn on the host
  info.codec = "randomk";
  info.lossless = {{"{ratio: 1}", 0},
                   {"{ratio: 1, shared_indices: false}", 0},
                   {"{ratio: 1, scope: global}", 0}};
  return info;
}

}  // namespace cedar
