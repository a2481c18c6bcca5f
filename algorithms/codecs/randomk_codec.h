#pragma once
// Random-k as a sparse codec (sparse_codec.h): the selection of algorithms/randomk.cpp,
// CHOCO-SGD's `compressor: randomk` and the codec registry's "randomk".
#include <cstdint>

#include "algorithms/codecs/random_subset.h"
#include "algorithms/codecs/sparse_codec.h"

namespace cedar {

// Random-k: k = ⌈ratio·numel⌉ distinct coordinates drawn uniformly from `gen` (one key drawn from
// it per tensor; the sampler of random_subset.h). values_only: the payload holds just the k fp32
// values (4·k bytes) — valid when every rank draws the same index set from the same generator;
// decompress then uses the index set of the last compress call (last_indices()).
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

}  // namespace cedar
