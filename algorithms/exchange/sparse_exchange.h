#pragma once
// The sparse (index, value) encoding shared by the sparsifying algorithms (DGC, top-k, random-k).
//
// Format of one encoding of n selected coordinates (native byte order, no header):
//   [ n int32 indices, ascending ][ n fp32 values ]          =  8·n bytes  (sparse_payload_bytes)
// The count is implied by the length (bytes / 8). Indices are int32, so a tensor (or the joint
// index space of several tensors, see scatter_add_segments) must hold fewer than 2^31 elements.
// A values-only encoding ([ n fp32 values ] = 4·n bytes) is used when every rank knows the index
// set already (random-k with a shared seed).
#include <cstdint>
#include <map>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/random_subset.h"
#include "algorithms/exchange/error_feedback.h"
#include "algorithms/exchange/magnitude_topk.h"

namespace cedar {

class Communicator;

constexpr int64_t kSparseBytesPerEntry = 8;  // int32 index + fp32 value
inline int64_t sparse_payload_bytes(int64_t nnz) { return kSparseBytesPerEntry * nnz; }

// k = ⌈numel·fraction⌉ clamped to [1, numel] (0 for an empty tensor); the tiny tolerance keeps
// products such as 1000·0.001 from rounding up to 2.
int64_t keep_count(int64_t numel, double fraction);

// Encodes `values` (fp32) at `indices` (any integer type, < 2^31) into 8·n bytes.
at::Tensor encode_sparse(const at::Tensor& indices, const at::Tensor& values);

struct SparseView {
  at::Tensor indices;  // int64, as encoded
  at::Tensor values;   // fp32
};
// Splits an 8·n-byte encoding back into indices and values; throws if the length is not 8·n.
SparseView decode_sparse(const at::Tensor& payload);

// A compressor that keeps a subset of coordinates: compress = encode(select(x), x[select(x)]),
// decompress = scatter into zeros. Subclasses define the selection.
class SparseCompressor : public Compressor {
 public:
  // Indices (int64, ascending, distinct) of the coordinates of 1-D fp32 `x` to keep.
  virtual at::Tensor select(const at::Tensor& x, at::Generator& gen) = 0;
  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override;
  // Decoding writes zeros and the payload's values in one pass over the output. The payload may
  // come from a peer: its indices must be strictly ascending within [0, numel), as every encoder
  // writes them, or std::invalid_argument is thrown (decompress_into's `out` then holds part of
  // the values).
  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override;
  void decompress_into(const at::Tensor& payload, at::Tensor& out) override;
  // x[i] -= v for the payload's (i, v): the other coordinates are left as they are (x - 0).
  void subtract_decoded(const at::Tensor& payload, at::Tensor& x, at::Tensor& scratch) override;
};

// Top-k by magnitude, exact: the k = ⌈ratio·numel⌉ largest |x_i|, equal magnitudes at the k-th
// taken lower index first (the rule in exchange/magnitude_topk.h; algorithms/topk.cpp). A tensor
// off the CPU is selected where it is (magnitude_topk_indices), with the same indices.
class TopKCompressor final : public SparseCompressor {
 public:
  explicit TopKCompressor(double ratio) : ratio_(ratio) {}
  at::Tensor select(const at::Tensor& x, at::Generator& gen) override;
  // Writes the selection straight into the payload (no index tensor in between).
  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override;
  int64_t payload_bytes(int64_t numel) const override {
    return sparse_payload_bytes(keep_count(numel, ratio_));
  }

 private:
  double ratio_;
  MagnitudeTopK topk_;
};

// Random-k: k = ⌈ratio·numel⌉ distinct coordinates drawn uniformly from `gen` (one key drawn from
// it per tensor; the sampler of codecs/random_subset.h; algorithms/randomk.cpp). values_only: the
// payload holds just the k fp32 values (4·k bytes) — valid when every rank draws the same index
// set from the same generator; decompress then uses the index set of the last compress call
// (last_indices()).
class RandomKCompressor final : public SparseCompressor {
 public:
  RandomKCompressor(double ratio, bool values_only) : ratio_(ratio), values_only_(values_only) {}
  at::Tensor select(const at::Tensor& x, at::Generator& gen) override;
  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override;
  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override;
  void decompress_into(const at::Tensor& payload, at::Tensor& out) override;
  void subtract_decoded(const at::Tensor& payload, at::Tensor& x, at::Tensor& scratch) override;
  int64_t payload_bytes(int64_t numel) const override {
    int64_t k = keep_count(numel, ratio_);
    return values_only_ ? 4 * k : sparse_payload_bytes(k);
  }
  const at::Tensor& last_indices() const { return last_indices_; }

 private:
  // A values-only payload's k fp32 values on `device`, its size checked against the index set.
  at::Tensor shared_values(const at::Tensor& payload, at::Device device, const char* who) const;

  double ratio_;
  bool values_only_;
  at::Tensor last_indices_;
  UniformSubset sampler_;
};

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

}  // namespace cedar
