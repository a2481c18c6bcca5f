// BatchPlanner: the loader's order and augmentation draws, exactly as the synchronous loader drew
// them (Fisher-Yates from (seed, epoch); per sample dy, dx, then the flip bit).
#include "datasets/batch_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

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

}  // namespace

BatchPlanner::BatchPlanner(ShardShape shape, Augmentation aug) : shape_(shape), aug_(aug) {
  if (shape.batch_size <= 0) throw std::invalid_argument("ShardedLoader: batch_size must be > 0");
  if (shape.world_size <= 0 || shape.rank < 0 || shape.rank >= shape.world_size)
    throw std::invalid_argument("ShardedLoader: rank " + std::to_string(shape.rank) +
                                " is not in [0, world_size=" + std::to_string(shape.world_size) +
                                ")");
  if (aug.pad_crop < 0) throw std::invalid_argument("ShardedLoader: pad_crop must be >= 0");
  seek(0);
}

int64_t BatchPlanner::samples_per_rank() const {
  const int64_t unit = shape_.drop_last ? shape_.world_size * shape_.batch_size : shape_.world_size;
  return (shape_.count / unit) * unit / shape_.world_size;
}

int64_t BatchPlanner::batches_per_epoch() const {
  const int64_t n = samples_per_rank();
  return shape_.drop_last ? n / shape_.batch_size : (n + shape_.batch_size - 1) / shape_.batch_size;
}

std::mt19937_64 BatchPlanner::epoch_rng(int64_t epoch) const {
  return std::mt19937_64(mix(mix(shape_.seed ^ 0xA5A5A5A5A5A5A5A5ull, static_cast<uint64_t>(epoch)),
                             static_cast<uint64_t>(shape_.rank)));
}

void BatchPlanner::shuffle_epoch(int64_t epoch) {
  const int64_t n = shape_.count;
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  if (shape_.shuffle) {  // Fisher-Yates from (seed, epoch): the same on every rank
    std::mt19937_64 rng(mix(shape_.seed, static_cast<uint64_t>(epoch)));
    for (int64_t i = n - 1; i > 0; --i) {
      const auto j = static_cast<int64_t>(below(rng, static_cast<uint64_t>(i + 1)));
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
    }
  }
  const int64_t per_rank = samples_per_rank();
  shard_.resize(static_cast<size_t>(per_rank));
  for (int64_t k = 0; k < per_rank; ++k)
    shard_[static_cast<size_t>(k)] = perm[static_cast<size_t>(k * shape_.world_size + shape_.rank)];
  epoch_ = epoch;
}

void BatchPlanner::seek(int64_t epoch, int64_t cursor, const std::mt19937_64& rng) {
  if (epoch < 0 || cursor < 0 || cursor > samples_per_rank())
    throw std::invalid_argument("ShardedLoader: position (epoch " + std::to_string(epoch) +
                                ", sample " + std::to_string(cursor) + ") is outside the data");
  if (epoch != epoch_ || shard_.size() != static_cast<size_t>(samples_per_rank()))
    shuffle_epoch(epoch);
  cursor_ = cursor;
  rng_ = rng;
  ended_ = false;
}

BatchPlan BatchPlanner::next() {
  if (ended_) seek(epoch_ + 1);
  BatchPlan plan;
  plan.epoch = epoch_;
  const auto total = static_cast<int64_t>(shard_.size());
  const int64_t b = std::min(shape_.batch_size, total - cursor_);
  // The shard is truncated, so a short batch is the last one of a drop_last-free epoch only.
  if (b <= 0 || (shape_.drop_last && b < shape_.batch_size)) {
    ended_ = true;
    plan.cursor_after = cursor_;
    plan.rng_after = rng_;
    return plan;
  }
  const int64_t pad = aug_.pad_crop;
  plan.samples.resize(static_cast<size_t>(b));
  for (int64_t j = 0; j < b; ++j) {
    SampleDraw& s = plan.samples[static_cast<size_t>(j)];
    s.index = shard_[static_cast<size_t>(cursor_ + j)];
    s.dy = pad;
    s.dx = pad;
    if (pad > 0) {
      s.dy = static_cast<int64_t>(below(rng_, static_cast<uint64_t>(2 * pad + 1)));
      s.dx = static_cast<int64_t>(below(rng_, static_cast<uint64_t>(2 * pad + 1)));
    }
    s.flip = aug_.hflip && (rng_() >> 63) != 0;
  }
  cursor_ += b;
  plan.cursor_after = cursor_;
  plan.rng_after = rng_;
  return plan;
}

}  // namespace cedar
