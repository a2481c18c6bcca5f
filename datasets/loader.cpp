// ShardedLoader: per-epoch permutation from (seed, epoch), truncated so every rank gets the same
// number of batches, strided over ranks; augmentation (zero-pad + random crop, horizontal flip)
// from a generator seeded by (seed, epoch, rank); normalisation through a per-channel table.
#include "datasets/loader.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cedar {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t mix(uint64_t a, uint64_t b) {
  return splitmix64(splitmix64(a) ^ (b * 0xD6E8FEB86659FD93ull));
}

// Uniform in [0, n); the modulo bias (n / 2^64) is negligible and, unlike
// std::uniform_int_distribution, the result is the same with every standard library.
uint64_t below(std::mt19937_64& rng, uint64_t n) { return rng() % n; }

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

ShardedLoader::ShardedLoader(const ImageSet& data, Normalization norm, Augmentation aug,
                             int64_t batch_size, int rank, int world_size, uint64_t seed,
                             bool shuffle, bool drop_last)
    : data_(data),
      norm_(std::move(norm)),
      aug_(aug),
      batch_size_(batch_size),
      rank_(rank),
      world_size_(world_size),
      seed_(seed),
      shuffle_(shuffle),
      drop_last_(drop_last) {
  if (batch_size <= 0) throw std::invalid_argument("ShardedLoader: batch_size must be > 0");
  if (world_size <= 0 || rank < 0 || rank >= world_size)
    throw std::invalid_argument("ShardedLoader: rank " + std::to_string(rank) +
                                " is not in [0, world_size=" + std::to_string(world_size) + ")");
  if (aug.pad_crop < 0) throw std::invalid_argument("ShardedLoader: pad_crop must be >= 0");
  if (data.count < 0 || data.channels <= 0 || data.height <= 0 || data.width <= 0 ||
      data.pixels.size() != static_cast<size_t>(data.count * data.image_bytes()) ||
      data.labels.size() != static_cast<size_t>(data.count))
    throw std::invalid_argument("ShardedLoader: inconsistent ImageSet '" + data.name + "'");
  norm_.mean = broadcast(norm_.mean, data.channels, 0.0f, "mean");
  norm_.std = broadcast(norm_.std, data.channels, 1.0f, "std");
  lut_.resize(static_cast<size_t>(data.channels) * 256);
  for (int64_t c = 0; c < data.channels; ++c) {
    const float mean = norm_.mean[static_cast<size_t>(c)];
    const float sd = norm_.std[static_cast<size_t>(c)];
    if (!(sd > 0.0f)) throw std::invalid_argument("ShardedLoader: normalisation std must be > 0");
    for (int p = 0; p < 256; ++p)
      lut_[static_cast<size_t>(c * 256 + p)] = (static_cast<float>(p) / 255.0f - mean) / sd;
  }
  start_epoch(0);
}

int64_t ShardedLoader::samples_per_rank() const {
  const int64_t unit = drop_last_ ? world_size_ * batch_size_ : world_size_;
  return (data_.count / unit) * unit / world_size_;
}

int64_t ShardedLoader::batches_per_epoch() const {
  const int64_t n = samples_per_rank();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

void ShardedLoader::start_epoch(int64_t epoch) {
  epoch_ = static_cast<uint64_t>(epoch);
  const int64_t n = data_.count;
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  if (shuffle_) {  // Fisher-Yates from (seed, epoch): the same on every rank
    std::mt19937_64 rng(mix(seed_, epoch_));
    for (int64_t i = n - 1; i > 0; --i) {
      const auto j = static_cast<int64_t>(below(rng, static_cast<uint64_t>(i + 1)));
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
    }
  }
  const int64_t per_rank = samples_per_rank();
  shard_.resize(static_cast<size_t>(per_rank));
  for (int64_t k = 0; k < per_rank; ++k)
    shard_[static_cast<size_t>(k)] = perm[static_cast<size_t>(k * world_size_ + rank_)];
  cursor_ = 0;
  aug_rng_.seed(mix(mix(seed_ ^ 0xA5A5A5A5A5A5A5A5ull, epoch_), static_cast<uint64_t>(rank_)));
}

LoaderPosition ShardedLoader::position() const {
  std::ostringstream rng;
  rng << aug_rng_;
  return {static_cast<int64_t>(epoch_), cursor_, rng.str()};
}

void ShardedLoader::restore(const LoaderPosition& pos) {
  if (pos.epoch < 0 || pos.cursor < 0 || pos.cursor > samples_per_rank())
    throw std::invalid_argument("ShardedLoader: position (epoch " + std::to_string(pos.epoch) +
                                ", sample " + std::to_string(pos.cursor) + ") is outside the data");
  start_epoch(pos.epoch);
  cursor_ = pos.cursor;
  if (pos.rng_state.empty()) return;  // the start of an epoch: start_epoch seeded the generator
  std::istringstream rng(pos.rng_state);
  rng >> aug_rng_;
  if (rng.fail()) throw std::invalid_argument("ShardedLoader: unreadable generator state");
}

bool ShardedLoader::next(Batch& out) {
  const auto total = static_cast<int64_t>(shard_.size());
  if (cursor_ >= total) return false;
  const int64_t b = std::min(batch_size_, total - cursor_);
  if (drop_last_ && b < batch_size_) return false;  // cannot happen: the shard is truncated
  const int64_t C = data_.channels, H = data_.height, W = data_.width;
  const std::vector<int64_t> image_shape{b, C, H, W};
  const std::vector<int64_t> label_shape{b};
  if (!reusable(out.images, image_shape, torch::kFloat32))
    out.images = torch::empty(image_shape, torch::kFloat32);
  if (!reusable(out.labels, label_shape, torch::kInt64))
    out.labels = torch::empty(label_shape, torch::kInt64);
  float* dst = out.images.data_ptr<float>();
  int64_t* labels = out.labels.data_ptr<int64_t>();

  const int64_t pad = aug_.pad_crop;
  for (int64_t j = 0; j < b; ++j) {
    const int64_t index = shard_[static_cast<size_t>(cursor_ + j)];
    labels[j] = data_.labels[static_cast<size_t>(index)];
    // Offsets into the zero-padded image: dy, dx in [0, 2 * pad]; then flip the crop.
    int64_t dy = pad, dx = pad;
    if (pad > 0) {
      dy = static_cast<int64_t>(below(aug_rng_, static_cast<uint64_t>(2 * pad + 1)));
      dx = static_cast<int64_t>(below(aug_rng_, static_cast<uint64_t>(2 * pad + 1)));
    }
    const bool flip = aug_.hflip && (aug_rng_() >> 63) != 0;
    const uint8_t* src = data_.image(index);
    float* img = dst + j * C * H * W;
    for (int64_t c = 0; c < C; ++c) {
      const float* lut = lut_.data() + c * 256;
      for (int64_t y = 0; y < H; ++y) {
        float* row = img + (c * H + y) * W;
        const int64_t sy = y + dy - pad;
        if (sy < 0 || sy >= H) {
          std::fill(row, row + W, lut[0]);
          continue;
        }
        const uint8_t* in = src + (c * H + sy) * W;
        for (int64_t x = 0; x < W; ++x) {
          const int64_t sx = (flip ? W - 1 - x : x) + dx - pad;
          row[x] = (sx < 0 || sx >= W) ? lut[0] : lut[in[sx]];
        }
      }
    }
  }
  cursor_ += b;
  return true;
}

}  // namespace cedar
