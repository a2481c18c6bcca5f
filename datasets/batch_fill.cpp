#include "datasets/batch_fill.h"

#include <ATen/Context.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cedar {
namespace {

// A batch tensor can be written in place when the caller's Batch is its only holder.
bool reusable(const torch::Tensor& t, torch::IntArrayRef shape, torch::ScalarType type) {
  return t.defined() && t.scalar_type() == type && t.sizes() == shape && t.is_contiguous() &&
         t.device().is_cpu() && !t.requires_grad() && t.use_count() == 1 &&
         t.storage().use_count() == 1;
}

std::vector<float> broadcast(const std::vector<float>& v, int64_t channels, float fallback,
                             const char* what) {
  if (v.empty()) return std::vector<float>(static_cast<size_t>(channels), fallback);
  if (v.size() == 1) return std::vector<float>(static_cast<size_t>(channels), v[0]);
  if (static_cast<int64_t>(v.size()) != channels)
    throw std::invalid_argument(std::string("ShardedLoader: normalisation ") + what + " has " +
                                std::to_string(v.size()) + " values for " +
                                std::to_string(channels) + " channels");
  return v;
}

}  // namespace

BatchFiller::BatchFiller(const ImageSet& data, const Normalization& norm, int64_t pad_crop,
                         bool pin_memory)
    : data_(data), pad_(pad_crop), pinned_(pin_memory && at::globalContext().hasCUDA()) {
  const bool pixels_ok = !data.in_memory() ||
                         data.pixels.size() == static_cast<size_t>(data.count * data.image_bytes());
  if (data.count < 0 || data.channels <= 0 || data.height <= 0 || data.width <= 0 || !pixels_ok ||
      data.labels.size() != static_cast<size_t>(data.count))
    throw std::invalid_argument("ShardedLoader: inconsistent ImageSet '" + data.name + "'");
  const std::vector<float> mean = broadcast(norm.mean, data.channels, 0.0f, "mean");
  const std::vector<float> sd = broadcast(norm.std, data.channels, 1.0f, "std");
  lut_.resize(static_cast<size_t>(data.channels) * 256);
  for (size_t c = 0; c < static_cast<size_t>(data.channels); ++c) {
    if (!(sd[c] > 0.0f))
      throw std::invalid_argument("ShardedLoader: normalisation std must be > 0");
    for (int p = 0; p < 256; ++p)
      lut_[c * 256 + static_cast<size_t>(p)] = (static_cast<float>(p) / 255.0f - mean[c]) / sd[c];
  }
}

bool BatchFiller::unshared(const Batch& batch) {
  return reusable(batch.images, batch.images.sizes(), torch::kFloat32) &&
         reusable(batch.labels, batch.labels.sizes(), torch::kInt64);
}

void BatchFiller::fill(const BatchPlan& plan, Batch& out, std::vector<uint8_t>& scratch) const {
  const auto b = static_cast<int64_t>(plan.samples.size());
  const int64_t C = data_.channels, H = data_.height, W = data_.width;
  const std::vector<int64_t> image_shape{b, C, H, W};
  const std::vector<int64_t> label_shape{b};
  // Pinned tensors are never reused: an asynchronous copy to the GPU may still be reading them
  // (the caching host allocator hands their memory out again only once it is done).
  const auto options = torch::TensorOptions().pinned_memory(pinned_);
  if (pinned_ || !reusable(out.images, image_shape, torch::kFloat32))
    out.images = torch::empty(image_shape, options.dtype(torch::kFloat32));
  if (pinned_ || !reusable(out.labels, label_shape, torch::kInt64))
    out.labels = torch::empty(label_shape, options.dtype(torch::kInt64));
  float* dst = out.images.data_ptr<float>();
  int64_t* labels = out.labels.data_ptr<int64_t>();
  if (!data_.in_memory()) scratch.resize(static_cast<size_t>(data_.image_bytes()));

  const int64_t pad = pad_;
  for (int64_t j = 0; j < b; ++j) {
    const SampleDraw& s = plan.samples[static_cast<size_t>(j)];
    labels[j] = data_.labels[static_cast<size_t>(s.index)];
    const uint8_t* src = scratch.data();
    if (data_.in_memory())
      src = data_.image(s.index);
    else
      data_.copy_image(s.index, scratch.data());
    // (dy, dx): the crop's offsets into the zero-padded image; then the crop is flipped.
    float* img = dst + j * C * H * W;
    for (int64_t c = 0; c < C; ++c) {
      const float* lut = lut_.data() + c * 256;
      for (int64_t y = 0; y < H; ++y) {
        float* row = img + (c * H + y) * W;
        const int64_t sy = y + s.dy - pad;
        if (sy < 0 || sy >= H) {
          std::fill(row, row + W, lut[0]);
          continue;
        }
        const uint8_t* in = src + (c * H + sy) * W;
        for (int64_t x = 0; x < W; ++x) {
          const int64_t sx = (s.flip ? W - 1 - x : x) + s.dx - pad;
          row[x] = (sx < 0 || sx >= W) ? lut[0] : lut[in[sx]];
        }
      }
    }
  }
}

}  // namespace cedar
