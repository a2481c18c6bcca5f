#pragma once
// How the sparse (index, value) encodings of codecs/sparse_codec.h travel and are kept: one
// allgatherv of a rank's encoding (DGC), the decoded pairs added into a bucket's segments, and the
// learning-rate-scaled error-feedback memory of top-k and random-k.
#include <cstdint>
#include <map>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/sparse_codec.h"
#include "algorithms/exchange/error_feedback.h"

namespace cedar {

class Communicator;

// One allgatherv of this rank's encoding; every rank's decoded pairs, in rank order.
// Metered cost: one allgatherv of payload.numel() bytes (plus its 8-byte count).
std::vector<SparseView> allgather_sparse(const at::Tensor& payload, Communicator& comm);

// Adds scale·values of `s` into `segments` (1-D fp32 tensors): s.indices address the
// concatenation of the segments and must be ascending (as encode_sparse's callers write them).
void scatter_add_segments(const SparseView& s, const std::vector<at::Tensor>& segments,
                          double scale);

// Stich et al. (2018) keep the memory in units of the step: m <- m + η·g - C(m + η·g).
// ErrorFeedback keeps it in gradient units (e = m/η, the optimizer multiplies by η), which is the
// same rule while η is constant; when η changes from η' to η, the memories of the bucket's
// tensors are multiplied by η'/η so that the rule stays the paper's. `last_lr` holds η' per bucket.
void rescale_memory_for_lr(ErrorFeedback& ef, const GradBucket& bucket,
                           std::map<int64_t, double>& last_lr, double lr);

// The error-feedback memory of top-k and random-k together with the learning rate each bucket
// last used, so that one object rescales it (above) and checkpoints it.
class LrScaledMemory {
 public:
  // Rescales the bucket's memories from the bucket's last learning rate to `lr`.
  void rescale(const GradBucket& bucket, double lr) {
    rescale_memory_for_lr(memory_, bucket, last_lr_, lr);
  }
  ErrorFeedback& memory() { return memory_; }
  // Keys "memory.<tensor name>" (the memories) and "last_lr" (bucket index -> learning rate).
  void save(AlgorithmState& out) const;
  void load(const AlgorithmState& in);

 private:
  ErrorFeedback memory_;
  std::map<int64_t, double> last_lr_;
};

// (0, 1]: the range of a sparsifier's `ratio` (fraction of each tensor's coordinates sent).
Bound keep_ratio_bound();

// The `scope` of top-k and random-k (GRACE issue #9; Dutta et al., AAAI 2020, compare layer-wise
// with entire-model compression): "layer" selects k = ⌈ratio·n_i⌉ in each tensor, "global"
// k = ⌈ratio·N⌉ over all N values of the model at once.
Bound sparsifier_scope_bound();

// For scope: global, the bucket as one tensor: a bucket (same index and flat buffer) with the
// single entry "bucket.<index>" (its memory's key) whose gradient is the whole flat buffer, the
// model's values in bucket order, so that a selection over it is model-wide. The model must be
// in this one bucket: `model_numel` is the element count of the parameters given to setup() (0
// when setup() was not called: the bucket is taken as the model), and a bucket of another size
// is refused (std::invalid_argument naming `who` and the train.bucket_mb that holds the model).
GradBucket whole_model_bucket(const GradBucket& bucket, int64_t model_numel, const char* who);

}  // namespace cedar
