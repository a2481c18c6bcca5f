#pragma once
// Turns an ImageSet into float batches for one rank: a disjoint shard of a permutation drawn from
// (seed, epoch), standard augmentation, per-dataset normalisation.
#include <torch/types.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "datasets/image_set.h"
#include "datasets/readers.h"

namespace cedar {

struct Augmentation {
  int64_t pad_crop = 0;  // pad by this many pixels (zeros) and crop back at a random offset
  bool hflip = false;    // random horizontal flip with probability 1/2
};

struct Batch {
  torch::Tensor images;  // float32 [B, C, H, W], normalised
  torch::Tensor labels;  // int64 [B]
};

// Where a loader is inside an epoch, for checkpoints: restoring it continues with the very batch
// (and augmentation draws) that would have come next.
struct LoaderPosition {
  int64_t epoch = 0;
  int64_t cursor = 0;     // samples of this rank's shard already served
  std::string rng_state;  // the augmentation generator, as std::mt19937_64 writes itself
};

class ShardedLoader {
 public:
  // Every rank gets the same number of batches per epoch (the permutation is truncated to a
  // multiple of world_size * batch_size when drop_last, else to a multiple of world_size).
  // Rank r takes positions r, r + world_size, ... of the truncated permutation, so global batch s
  // is the same slice of the permutation whatever the world size. `data` must outlive the
  // loader. Epoch 0 is started by the constructor. next() writes into `out`'s tensors in place
  // when nothing else holds them (a reused Batch), else it allocates fresh ones.
  ShardedLoader(const ImageSet& data, Normalization norm, Augmentation aug, int64_t batch_size,
                int rank, int world_size, uint64_t seed, bool shuffle, bool drop_last);

  void start_epoch(int64_t epoch);  // reshuffles from (seed, epoch)
  int64_t batches_per_epoch() const;
  bool next(Batch& out);             // false once the epoch's shard is exhausted
  int64_t samples_per_rank() const;  // this rank's shard size per epoch
  LoaderPosition position() const;
  void restore(const LoaderPosition& pos);  // throws std::invalid_argument on a bad position

 private:
  const ImageSet& data_;
  Normalization norm_;
  Augmentation aug_;
  int64_t batch_size_;
  int rank_, world_size_;
  uint64_t seed_;
  bool shuffle_, drop_last_;
  std::vector<int64_t> shard_;
  int64_t cursor_ = 0;
  uint64_t epoch_ = 0;
  std::vector<float> lut_;   // channels x 256: normalised value of each pixel byte
  std::mt19937_64 aug_rng_;  // augmentation draws, reseeded from (seed, epoch, rank)
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
  int64_t synthetic_train = 2048;  // synthetic: sizes
  int64_t synthetic_test = 512;
  uint64_t seed = 0;  // synthetic only
};

struct LoadedDataset {
  ImageSet train;
  ImageSet test;
  Normalization norm;
  Augmentation train_aug;
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
