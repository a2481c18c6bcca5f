#pragma once
// Turns an ImageSet into float batches for one rank: a disjoint shard of a permutation drawn from
// (seed, epoch), standard augmentation, per-dataset normalisation; optionally prepared ahead of
// the caller on background threads, the batches bitwise the same either way.
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "datasets/batch_fill.h"
#include "datasets/batch_plan.h"
#include "datasets/image_set.h"
#include "datasets/readers.h"

namespace cedar {

class Prefetcher;

// Where a loader is inside an epoch, for checkpoints: restoring it continues with the very batch
// (and augmentation draws) that would have come next.
struct LoaderPosition {
  int64_t epoch = 0;
  int64_t cursor = 0;     // samples of this rank's shard already served
  std::string rng_state;  // the augmentation generator, as std::mt19937_64 writes itself
};

// How batches are prepared (data.prefetch, data.workers; pinned memory for a CUDA run).
struct PrefetchOptions {
  int64_t depth = 0;        // batches prepared ahead on background threads (0: by next() itself)
  int64_t workers = 1;      // threads preparing them when depth > 0
  bool pin_memory = false;  // page-locked batches for asynchronous copies (only with CUDA present)
};

// Where a trainer's batches come from: the sharded image loader, or a worker's whole shard
// (datasets/full_batch.h).
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual void start_epoch(int64_t epoch) = 0;
  virtual int64_t batches_per_epoch() const = 0;
  virtual bool next(Batch& out) = 0;  // false once the epoch is over
  virtual LoaderPosition position() const = 0;
  virtual void restore(const LoaderPosition& pos) = 0;
};

class ShardedLoader final : public BatchSource {
 public:
  // Every rank gets the same number of batches per epoch (the permutation is truncated to a
  // multiple of world_size * batch_size when drop_last, else to a multiple of world_size).
  // Rank r takes positions r, r + world_size, ... of the truncated permutation, so global batch s
  // is the same slice of the permutation whatever the world size. `data` must outlive the
  // loader. Epoch 0 is started by the constructor. next() writes into `out`'s tensors in place
  // when nothing else holds them (a reused Batch), else it allocates fresh ones.
  //
  // With prefetch.depth > 0, prefetch.workers threads prepare the batches that follow the last
  // one handed over, at most depth of them, running on into the next epoch while the caller is
  // between epochs (start_epoch(e + 1) after the end of epoch e keeps them). The batches, their
  // order and position() are those of the synchronous loader: position() is that of the batches
  // handed over, not of those prepared. A batch's error (an unreadable file of a set kept as
  // files) is thrown by the next() that would have returned it. The destructor stops and joins
  // the threads.
  ShardedLoader(const ImageSet& data, Normalization norm, Augmentation aug, int64_t batch_size,
                int rank, int world_size, uint64_t seed, bool shuffle, bool drop_last,
                PrefetchOptions prefetch = {});
  // The loader keeps `data` by reference: a temporary would be gone before the first batch.
  ShardedLoader(ImageSet&& data, Normalization norm, Augmentation aug, int64_t batch_size, int rank,
                int world_size, uint64_t seed, bool shuffle, bool drop_last,
                PrefetchOptions prefetch = {}) = delete;
  ~ShardedLoader();
  ShardedLoader(const ShardedLoader&) = delete;
  ShardedLoader& operator=(const ShardedLoader&) = delete;

  void start_epoch(int64_t epoch) override;  // reshuffles from (seed, epoch)
  int64_t batches_per_epoch() const override;
  bool next(Batch& out) override;    // false once the epoch's shard is exhausted
  int64_t samples_per_rank() const;  // this rank's shard size per epoch
  LoaderPosition position() const override;
  // Throws std::invalid_argument on a bad position.
  void restore(const LoaderPosition& pos) override;
  bool pinned() const { return filler_.pinned(); }

 private:
  // Moves the planner (through the prefetcher when there is one).
  void reposition(int64_t epoch, int64_t cursor, const std::mt19937_64& rng);

  BatchFiller filler_;
  BatchPlanner planner_;
  // What the caller has been handed: the position() of the loader.
  int64_t epoch_ = 0;
  int64_t cursor_ = 0;
  std::mt19937_64 rng_;
  bool epoch_over_ = false;       // next() returned false; the planner has run on into epoch_ + 1
  bool in_step_ = true;           // the planner continues from this position (false after an error)
  std::vector<uint8_t> scratch_;  // a decoded image, synchronous path
  std::unique_ptr<Prefetcher> prefetch_;  // null: synchronous; last, so it stops first
};

// Known datasets by name: "cifar10", "cifar100", "mnist", "fashion-mnist", "imagenet-folder",
// "synthetic". See datasets/registry.cpp.
struct DatasetSpec {
  std::string name = "fashion-mnist";
  std::string root;         // folder with the files; defaults per dataset
  int64_t train_limit = 0;  // keep the first N training images (0 = all)
  int64_t test_limit = 0;
  bool augment = true;
  int64_t num_classes = 0;  // imagenet-folder: number of classes (0 = all); synthetic: classes
  int64_t per_class = 0;    // imagenet-folder: images per class (0 = all)
  int64_t image_size = 0;   // imagenet-folder / synthetic: side length
  bool lazy_decode =
      false;  // imagenet-folder: keep the files, decode when read (index_image_folder)
  int64_t synthetic_train = 2048;  // synthetic: sizes
  int64_t synthetic_test = 512;
  uint64_t seed = 0;  // synthetic, synthetic-regression, sign-counterexample
  // synthetic-regression / sign-counterexample (datasets/regression.h)
  std::string task = "linear";  // linear or logistic (synthetic-regression)
  int64_t shards = 9;           // M: one per worker
  int64_t features = 50;        // d, also the samples per shard
  double growth = 1.3;          // synthetic-regression: L_m grows as (1 + growth^(m-1))^2
};

struct RegressionSet;

struct LoadedDataset {
  ImageSet train;
  ImageSet test;
  Normalization norm;
  Augmentation train_aug;
  // Regression data sets: the features and targets (train and test then carry only the shape).
  std::shared_ptr<const RegressionSet> regression;
};

LoadedDataset load_dataset(const DatasetSpec& spec);

// The spec a run's configuration asks for (its data section; the synthetic set's seed is the
// run's train.seed).
struct ExperimentConfig;
DatasetSpec dataset_spec(const ExperimentConfig& cfg);

// What load_dataset(spec) would load, told from listings, headers and sizes (datasets/readers.h:
// the probes): the train and test shapes, or every problem the probes found, each naming its
// file. Cheap: no image is decoded.
struct DatasetProbe {
  ImageSetShape train;
  ImageSetShape test;
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};
DatasetProbe probe_dataset(const DatasetSpec& spec);

struct DatasetInfo {
  std::string name;
  std::string description;
};
const std::vector<DatasetInfo>& dataset_catalog();

}  // namespace cedar
