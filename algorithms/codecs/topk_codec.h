#pragma once
// Top-k by magnitude as a sparse codec (sparse_codec.h): the selection of algorithms/topk.cpp,
// CHOCO-SGD's `compressor: topk` and the codec registry's "topk".
#include <cstdint>

#include "algorithms/codecs/magnitude_topk.h"
#include "algorithms/codecs/sparse_codec.h"

namespace cedar {

// Top-k by magnitude, exact: the k = ⌈ratio·numel⌉ largest |x_i|, equal magnitudes at the k-th
// taken lower index first (the rule in magnitude_topk.h). A tensor off the CPU is selected where
// it is (magnitude_topk_indices), with the same indices.
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

}  // namespace cedar
