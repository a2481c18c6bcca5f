#pragma once
// Turns a planned batch (datasets/batch_plan.h) into float tensors: each image read from its set
// (from memory, or decoded from its file), cropped and flipped as drawn, normalised through a
// per-channel table. Draws nothing and changes nothing shared, so several threads may fill
// batches with one BatchFiller at once.
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "datasets/batch_plan.h"
#include "datasets/image_set.h"

namespace cedar {

struct Batch {
  torch::Tensor images;  // float32 [B, C, H, W], normalised
  torch::Tensor labels;  // int64 [B]
};

class BatchFiller {
 public:
  // `data` must outlive the filler. With pin_memory (and CUDA present) batches are allocated in
  // page-locked host memory, so copies to a GPU can be asynchronous.
  BatchFiller(const ImageSet& data, const Normalization& norm, int64_t pad_crop, bool pin_memory);

  bool pinned() const { return pinned_; }
  // Writes into `out`'s tensors in place when they are reusable (unshared, the right shape, not
  // pinned), else allocates fresh ones. `scratch` holds a decoded image of a set kept as files.
  void fill(const BatchPlan& plan, Batch& out, std::vector<uint8_t>& scratch) const;
  // Whether no one but `batch` holds its tensors (fill() may then write into them).
  static bool unshared(const Batch& batch);

 private:
  const ImageSet& data_;
  int64_t pad_;
  bool pinned_;
  std::vector<float> lut_;  // channels x 256: normalised value of each pixel byte
};

}  // namespace cedar
