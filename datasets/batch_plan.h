#pragma once
// What each batch of a rank holds, decided in batch order by one planner: which images, and the
// augmentation draws of each. Filling a planned batch (datasets/batch_fill.h) draws nothing, so a
// batch is the same whichever thread fills it and however far ahead.
#include <cstdint>
#include <random>
#include <vector>

namespace cedar {

struct Augmentation {
  int64_t pad_crop = 0;  // pad by this many pixels (zeros) and crop back at a random offset
  bool hflip = false;    // random horizontal flip with probability 1/2
};

// One image of a batch: its index in the set, the crop's offsets into the zero-padded image
// (each in [0, 2 * pad_crop]) and whether the crop is flipped.
struct SampleDraw {
  int64_t index = 0;
  int64_t dy = 0;
  int64_t dx = 0;
  bool flip = false;
};

struct BatchPlan {
  int64_t epoch = 0;
  int64_t cursor_after = 0;         // the epoch's samples served once this batch is consumed
  std::vector<SampleDraw> samples;  // empty: the end of the epoch
  std::mt19937_64 rng_after;        // the augmentation generator after this batch's draws
  bool end_of_epoch() const { return samples.empty(); }
};

struct ShardShape {
  int64_t count = 0;  // images in the set
  int64_t batch_size = 1;
  int rank = 0;
  int world_size = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = true;
};

// The plans of one rank as a stream: the batches of an epoch, an end-of-epoch plan, then the
// next epoch's batches. The epoch's permutation comes from (seed, epoch), truncated so every rank
// gets the same number of batches and strided over the ranks; the augmentation draws from a
// generator seeded by (seed, epoch, rank).
class BatchPlanner {
 public:
  BatchPlanner(ShardShape shape, Augmentation aug);

  int64_t samples_per_rank() const;
  int64_t batches_per_epoch() const;
  // The generator an epoch's draws start from.
  std::mt19937_64 epoch_rng(int64_t epoch) const;
  // Continues the stream at `cursor` samples into `epoch`, the generator in state `rng`.
  void seek(int64_t epoch, int64_t cursor, const std::mt19937_64& rng);
  void seek(int64_t epoch) { seek(epoch, 0, epoch_rng(epoch)); }
  BatchPlan next();

 private:
  void shuffle_epoch(int64_t epoch);

  ShardShape shape_;
  Augmentation aug_;
  int64_t epoch_ = 0;
  std::vector<int64_t> shard_;  // this rank's images of epoch_, in order
  int64_t cursor_ = 0;
  bool ended_ = false;  // the end of epoch_ was planned: the next plan starts epoch_ + 1
  std::mt19937_64 rng_;
};

}  // namespace cedar
