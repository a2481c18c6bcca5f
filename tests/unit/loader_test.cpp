// ShardedLoader (sharding, shuffling, normalisation, augmentation) and the dataset registry.
#include "datasets/loader.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/readers.h"
#include "tests/unit/testdata_writers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

// n images of c x h x w; label i identifies image i, pixels are never 0 (0 marks padding).
ImageSet indexed_set(int64_t n, int64_t c = 1, int64_t h = 2, int64_t w = 2) {
  ImageSet set;
  set.name = "indexed";
  set.count = n;
  set.channels = c;
  set.height = h;
  set.width = w;
  set.num_classes = n;
  for (int64_t i = 0; i < n; ++i) {
    set.labels.push_back(i);
    for (int64_t p = 0; p < c * h * w; ++p)
      set.pixels.push_back(static_cast<uint8_t>(1 + (i * 31 + p * 7) % 255));
  }
  return set;
}

// Every label this loader yields in the current epoch, in order.
std::vector<int64_t> drain(ShardedLoader& loader) {
  std::vector<int64_t> out;
  Batch batch;
  while (loader.next(batch)) {
    auto labels = batch.labels.contiguous();
    out.insert(out.end(), labels.data_ptr<int64_t>(), labels.data_ptr<int64_t>() + labels.numel());
  }
  return out;
}

std::vector<int64_t> order(const ImageSet& set, uint64_t seed, int64_t epoch, bool shuffle = true) {
  ShardedLoader loader(set, {}, {}, 7, 0, 1, seed, shuffle, false);
  loader.start_epoch(epoch);
  return drain(loader);
}

TEST(ShardedLoader, ShardsAreDisjointAndCoverTheTruncatedPermutation) {
  const ImageSet set = indexed_set(103);
  const std::vector<int64_t> perm = order(set, 42, 3);
  ASSERT_EQ(perm.size(), 103u);
  EXPECT_EQ(std::set<int64_t>(perm.begin(), perm.end()).size(), 103u);
  const int64_t batch = 5;
  for (int world : {1, 2, 3, 4}) {
    for (bool drop_last : {true, false}) {
      const int64_t unit = drop_last ? world * batch : world;
      const int64_t keep = 103 / unit * unit;
      std::set<int64_t> seen;
      for (int rank = 0; rank < world; ++rank) {
        ShardedLoader loader(set, {}, {}, batch, rank, world, 42, true, drop_last);
        loader.start_epoch(3);
        EXPECT_EQ(loader.samples_per_rank(), keep / world);
        const int64_t batches =
            drop_last ? keep / world / batch : (keep / world + batch - 1) / batch;
        EXPECT_EQ(loader.batches_per_epoch(), batches);
        int64_t counted = 0;
        Batch b;
        std::vector<int64_t> mine;
        while (loader.next(b)) {
          ++counted;
          if (drop_last) {
            EXPECT_EQ(b.labels.size(0), batch);
          }
          for (int64_t j = 0; j < b.labels.size(0); ++j)
            mine.push_back(b.labels[j].item<int64_t>());
        }
        EXPECT_EQ(counted, batches) << "world " << world << " rank " << rank;
        ASSERT_EQ(static_cast<int64_t>(mine.size()), keep / world);
        for (size_t k = 0; k < mine.size(); ++k) {
          // Strided: rank r's k-th sample is position k * world + r of the permutation.
          EXPECT_EQ(mine[k], perm[k * static_cast<size_t>(world) + static_cast<size_t>(rank)]);
          EXPECT_TRUE(seen.insert(mine[k]).second) << "sample " << mine[k] << " on two ranks";
        }
      }
      EXPECT_EQ(seen, std::set<int64_t>(perm.begin(), perm.begin() + keep));
    }
  }
}

TEST(ShardedLoader, OrderDependsOnSeedAndEpochOnly) {
  const ImageSet set = indexed_set(50);
  EXPECT_EQ(order(set, 1, 0), order(set, 1, 0));
  EXPECT_EQ(order(set, 1, 5), order(set, 1, 5));
  EXPECT_NE(order(set, 1, 0), order(set, 1, 1));
  EXPECT_NE(order(set, 1, 0), order(set, 2, 0));
  std::vector<int64_t> identity(50);
  for (int64_t i = 0; i < 50; ++i) identity[static_cast<size_t>(i)] = i;
  EXPECT_EQ(order(set, 1, 4, false), identity);

  // Restarting an epoch replays it exactly.
  ShardedLoader loader(set, {}, {}, 8, 1, 2, 9, true, true);
  loader.start_epoch(2);
  const auto first = drain(loader);
  loader.start_epoch(2);
  EXPECT_EQ(drain(loader), first);
}

TEST(ShardedLoader, BatchShapesAndExactNormalisation) {
  const ImageSet set = indexed_set(5, 3, 4, 4);
  const Normalization norm{{0.1f, 0.2f, 0.3f}, {0.5f, 0.25f, 0.125f}};
  ShardedLoader loader(set, norm, {}, 2, 0, 1, 0, false, false);
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  Batch b;
  std::vector<int64_t> sizes;
  int64_t first = 0;
  while (loader.next(b)) {
    ASSERT_EQ(b.images.dim(), 4);
    EXPECT_EQ(b.images.scalar_type(), torch::kFloat32);
    EXPECT_EQ(b.labels.scalar_type(), torch::kInt64);
    EXPECT_EQ(b.images.size(1), 3);
    EXPECT_EQ(b.images.size(2), 4);
    EXPECT_EQ(b.images.size(3), 4);
    const auto images = b.images.accessor<float, 4>();
    for (int64_t j = 0; j < b.images.size(0); ++j) {
      const int64_t i = first + j;
      EXPECT_EQ(b.labels[j].item<int64_t>(), i);
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t y = 0; y < 4; ++y)
          for (int64_t x = 0; x < 4; ++x) {
            const float pixel = set.image(i)[(c * 4 + y) * 4 + x];
            const float want = (pixel / 255.0f - norm.mean[static_cast<size_t>(c)]) /
                               norm.std[static_cast<size_t>(c)];
            ASSERT_EQ(images[j][c][y][x], want) << i << " " << c << " " << y << " " << x;
          }
    }
    sizes.push_back(b.images.size(0));
    first += b.images.size(0);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2, 1}));

  // A known pixel: 255 in channel 0 maps to (1 - 0.1) / 0.5.
  ImageSet white = indexed_set(1, 3, 1, 1);
  white.pixels = {255, 0, 51};
  ShardedLoader one(white, norm, {}, 1, 0, 1, 0, false, true);
  ASSERT_TRUE(one.next(b));
  EXPECT_FLOAT_EQ(b.images[0][0][0][0].item<float>(), 1.8f);
  EXPECT_FLOAT_EQ(b.images[0][1][0][0].item<float>(), -0.8f);
  EXPECT_FLOAT_EQ(b.images[0][2][0][0].item<float>(), -0.8f);
}

TEST(ShardedLoader, ReusesTheBatchBufferOnlyWhenUnshared) {
  const ImageSet set = indexed_set(40, 1, 3, 3);
  ShardedLoader loader(set, {}, {}, 4, 0, 1, 0, true, true);
  Batch b;
  ASSERT_TRUE(loader.next(b));
  const void* buffer = b.images.data_ptr();
  ASSERT_TRUE(loader.next(b));
  EXPECT_EQ(b.images.data_ptr(), buffer);
  const torch::Tensor kept = b.images;
  const torch::Tensor snapshot = kept.clone();
  ASSERT_TRUE(loader.next(b));
  EXPECT_NE(b.images.data_ptr(), kept.data_ptr());
  EXPECT_TRUE(torch::equal(kept, snapshot));
}

// The image (c x h x w floats) as it would come out for shift (dy, dx) and flip.
bool matches_augmentation(const torch::Tensor& got, const ImageSet& set, int64_t index, int64_t pad,
                          const std::vector<float>& lut) {
  const int64_t C = set.channels, H = set.height, W = set.width;
  const auto a = got.accessor<float, 3>();
  for (int64_t dy = 0; dy <= 2 * pad; ++dy)
    for (int64_t dx = 0; dx <= 2 * pad; ++dx)
      for (bool flip : {false, true}) {
        bool same = true;
        for (int64_t c = 0; c < C && same; ++c)
          for (int64_t y = 0; y < H && same; ++y)
            for (int64_t x = 0; x < W && same; ++x) {
              const int64_t sy = y + dy - pad, sx = (flip ? W - 1 - x : x) + dx - pad;
              const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
              const uint8_t p = inside ? set.image(index)[(c * H + sy) * W + sx] : 0;
              same = a[c][y][x] == lut[p];
            }
        if (same) return true;
      }
  return false;
}

TEST(ShardedLoader, AugmentationKeepsShapeAndIsReproducible) {
  const ImageSet set = indexed_set(24, 2, 6, 5);
  const Augmentation aug{2, true};
  auto run = [&](int64_t epoch, int rank) {
    ShardedLoader loader(set, {{0.5f}, {0.5f}}, aug, 4, rank, 2, 11, true, true);
    loader.start_epoch(epoch);
    std::vector<torch::Tensor> out;
    Batch b;
    while (loader.next(b)) {
      EXPECT_EQ(b.images.sizes(), (std::vector<int64_t>{4, 2, 6, 5}));
      out.push_back(b.images.clone());
      out.push_back(b.labels.clone());
    }
    return out;
  };
  const auto a = run(1, 0), again = run(1, 0), other_epoch = run(2, 0);
  ASSERT_EQ(a.size(), again.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], again[i]));
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs |= !torch::equal(a[i], other_epoch[i]);
  EXPECT_TRUE(differs);

  // Every augmented image is its source shifted within the padding and maybe flipped, and the
  // draws are not all the identity.
  std::vector<float> lut(256);
  for (int p = 0; p < 256; ++p) lut[static_cast<size_t>(p)] = (p / 255.0f - 0.5f) / 0.5f;
  int changed = 0;
  for (size_t i = 0; i < a.size(); i += 2)
    for (int64_t j = 0; j < a[i].size(0); ++j) {
      const int64_t index = a[i + 1][j].item<int64_t>();
      EXPECT_TRUE(matches_augmentation(a[i][j], set, index, 2, lut)) << "sample " << index;
      changed += !matches_augmentation(a[i][j], set, index, 0, lut);
    }
  EXPECT_GT(changed, 0);
}

TEST(ShardedLoader, RejectsBadArguments) {
  const ImageSet set = indexed_set(10);
  EXPECT_THROW(ShardedLoader(set, {}, {}, 0, 0, 1, 0, true, true), std::invalid_argument);
  EXPECT_THROW(ShardedLoader(set, {}, {}, 2, 2, 2, 0, true, true), std::invalid_argument);
  EXPECT_THROW(ShardedLoader(set, {{0.1f, 0.2f}, {1.f, 1.f}}, {}, 2, 0, 1, 0, true, true),
               std::invalid_argument);
}

// --- prefetching -------------------------------------------------------------------------

// Every batch of `epochs` epochs as (images, labels) copies, the epochs started the trainer's way.
std::vector<torch::Tensor> batches(ShardedLoader& loader, int64_t first_epoch, int64_t epochs) {
  std::vector<torch::Tensor> out;
  Batch b;
  for (int64_t e = first_epoch; e < first_epoch + epochs; ++e) {
    loader.start_epoch(e);
    while (loader.next(b)) {
      out.push_back(b.images.clone());
      out.push_back(b.labels.clone());
    }
    // As without prefetch, the end of the epoch leaves the caller's last batch alone.
    if (!out.empty()) {
      EXPECT_TRUE(torch::equal(b.labels, out.back()));
    }
  }
  return out;
}

void expect_same(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(torch::equal(got[i], want[i])) << what << ": tensor " << i << " of batch " << i / 2;
}

TEST(ShardedLoaderPrefetch, SameBatchesInOrderAcrossEpochs) {
  // 27 images on rank 1 of 2, batches of 4, no drop_last: epochs end on a short batch.
  const ImageSet set = indexed_set(27, 2, 6, 5);
  const Augmentation aug{2, true};
  auto loader = [&](PrefetchOptions p) {
    return std::make_unique<ShardedLoader>(set, Normalization{{0.5f}, {0.25f}}, aug, 4, 1, 2, 7,
                                           true, false, p);
  };
  const auto want = batches(*loader({}), 0, 3);
  ASSERT_EQ(want.size(), 3u * 2u * 4u);  // 13 samples per epoch: 4 batches
  for (int64_t depth : {1, 3})
    for (int64_t workers : {1, 3}) {
      const std::string what =
          "depth " + std::to_string(depth) + ", workers " + std::to_string(workers);
      expect_same(batches(*loader({depth, workers, false}), 0, 3), want, what);
      // The parameter server's pattern: the next epoch started once next() says the last ended.
      auto l = loader({depth, workers, false});
      std::vector<torch::Tensor> got;
      Batch b;
      int64_t epoch = 0;
      while (static_cast<int64_t>(got.size()) < static_cast<int64_t>(want.size())) {
        while (!l->next(b)) l->start_epoch(++epoch);
        got.push_back(b.images.clone());
        got.push_back(b.labels.clone());
      }
      expect_same(got, want, what + " (restarted by next() == false)");
    }
}

TEST(ShardedLoaderPrefetch, ResumeMidEpochContinuesTheUninterruptedSequence) {
  const ImageSet set = indexed_set(40, 1, 5, 5);
  const Augmentation aug{1, true};
  auto make = [&](PrefetchOptions p) {
    return std::make_unique<ShardedLoader>(set, Normalization{}, aug, 3, 0, 2, 5, true, true, p);
  };
  const auto want = batches(*make({}), 0, 3);  // 6 batches per epoch
  for (int64_t taken : {0, 2, 6}) {            // epoch 1's start, middle and end
    auto first = make({3, 2, false});
    std::vector<torch::Tensor> got = batches(*first, 0, 1);
    auto sync = make({});
    batches(*sync, 0, 1);
    first->start_epoch(1);
    sync->start_epoch(1);
    Batch b, s;
    for (int64_t k = 0; k < taken; ++k) {
      ASSERT_TRUE(first->next(b));
      ASSERT_TRUE(sync->next(s));
      got.push_back(b.images.clone());
      got.push_back(b.labels.clone());
    }
    // What was handed over, not what the workers prepared beyond it.
    const LoaderPosition pos = first->position();
    EXPECT_EQ(pos.epoch, 1);
    EXPECT_EQ(pos.cursor, taken * 3);
    EXPECT_EQ(pos.rng_state, sync->position().rng_state) << "after " << taken << " batches";
    first.reset();  // the interrupted run's loader goes, its workers mid-way

    auto resumed = make({3, 2, false});
    resumed->restore(pos);
    while (resumed->next(b)) {
      got.push_back(b.images.clone());
      got.push_back(b.labels.clone());
    }
    const auto rest = batches(*resumed, 2, 1);
    got.insert(got.end(), rest.begin(), rest.end());
    expect_same(got, want, "resumed after " + std::to_string(taken) + " batches of epoch 1");
  }
}

TEST(ShardedLoaderPrefetch, RestartsAndStopsCleanlyMidEpoch) {
  const ImageSet set = indexed_set(64, 3, 8, 8);
  const Augmentation aug{2, true};
  auto make = [&](PrefetchOptions p) {
    return std::make_unique<ShardedLoader>(set, Normalization{}, aug, 4, 0, 1, 3, true, true, p);
  };
  const auto epoch2 = batches(*make({}), 2, 1);
  auto loader = make({4, 2, false});
  Batch b;
  // Restarting mid-epoch drops what the workers prepared: the epoch comes out whole.
  for (int round = 0; round < 3; ++round) {
    loader->start_epoch(1);
    for (int k = 0; k < round + 1; ++k) ASSERT_TRUE(loader->next(b));
    expect_same(batches(*loader, 2, 1), epoch2, "epoch 2 after a restart");
  }
  // A bad position changes nothing: the loader continues where it was.
  loader->start_epoch(2);
  ASSERT_TRUE(loader->next(b));
  EXPECT_THROW(loader->restore({2, 1000, ""}), std::invalid_argument);
  EXPECT_THROW(loader->restore({2, 4, "not a generator"}), std::invalid_argument);
  std::vector<torch::Tensor> got{b.images.clone(), b.labels.clone()};
  while (loader->next(b)) {
    got.push_back(b.images.clone());
    got.push_back(b.labels.clone());
  }
  expect_same(got, epoch2, "epoch 2 after rejected positions");
  // Destroyed with the workers mid-epoch, right after construction, and while an exception
  // leaves the consumer's scope: each destructor joins its threads (an unjoined std::thread
  // would terminate the process).
  loader->start_epoch(3);
  ASSERT_TRUE(loader->next(b));
  loader.reset();
  make({8, 4, false}).reset();
  EXPECT_THROW(
      {
        auto l = make({2, 1, false});
        while (l->next(b)) throw std::runtime_error("a failed step");
      },
      std::runtime_error);
  EXPECT_THROW(make({-1, 1, false}), std::invalid_argument);
  EXPECT_THROW(make({2, 0, false}), std::invalid_argument);
}

// An ImageFolder tree of textured JPEGs of assorted shapes: 3 classes, 7 images each.
void write_textured_folder(const fs::path& root) {
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 7; ++k) {
      const int w = 20 + 9 * k, h = 18 + 5 * ((k + c) % 4);
      std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int ch = 0; ch < 3; ++ch)
            rgb[static_cast<size_t>((y * w + x) * 3 + ch)] =
                static_cast<uint8_t>((x * (ch + 2) * 13 + y * (c + 3) * 7 + k * 29) & 0xff);
      testdata::write_jpeg(
          root / "train" / ("n0" + std::to_string(c)) / ("img" + std::to_string(k) + ".JPEG"), rgb,
          w, h);
    }
}

TEST(ShardedLoaderPrefetch, LazyImageFolderBatchesAreTheEagerOnes) {
  testdata::TempDir tmp("lazy_loader");
  write_textured_folder(tmp.path());
  const ImageSet eager = read_image_folder(tmp.str(), "train", 0, 0, 16);
  const ImageSet lazy = index_image_folder(tmp.str(), "train", 0, 0, 16);
  const Normalization norm{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  const Augmentation aug{2, true};
  auto run = [&](const ImageSet& set, PrefetchOptions p) {
    ShardedLoader loader(set, norm, aug, 4, 0, 1, 11, true, false, p);
    return batches(loader, 0, 2);
  };
  const auto want = run(eager, {});
  expect_same(run(lazy, {}), want, "lazy, synchronous");
  expect_same(run(lazy, {3, 2, false}), want, "lazy, prefetch 3 on 2 workers");
}

TEST(ShardedLoaderPrefetch, LazyUndecodableFileFailsItsOwnBatchNamingTheFile) {
  testdata::TempDir tmp("lazy_bad");
  write_textured_folder(tmp.path());
  const fs::path bad = tmp.path() / "train" / "n01" / "img3.JPEG";
  testdata::write_bytes(bad, std::vector<uint8_t>(64, 0x42));
  const ImageSet lazy = index_image_folder(tmp.str(), "train", 0, 0, 16);
  const int64_t bad_index = 7 + 3;  // class n01's fourth file
  // The batch of epoch 0 that holds the bad image, from the synchronous order.
  int64_t bad_batch = -1;
  {
    const ImageSet indexed = indexed_set(21);
    ShardedLoader order(indexed, {}, {}, 4, 0, 1, 11, true, false);
    Batch b;
    for (int64_t k = 0; order.next(b) && bad_batch < 0; ++k)
      for (int64_t j = 0; j < b.labels.size(0); ++j)
        if (b.labels[j].item<int64_t>() == bad_index) bad_batch = k;
  }
  ASSERT_GE(bad_batch, 0);
  for (const PrefetchOptions p : {PrefetchOptions{}, PrefetchOptions{3, 2, false}}) {
    ShardedLoader loader(lazy, {}, {}, 4, 0, 1, 11, true, false, p);
    Batch b;
    int64_t served = 0;
    try {
      while (loader.next(b)) ++served;
      ADD_FAILURE() << "expected DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
    }
    EXPECT_EQ(served, bad_batch) << "depth " << p.depth;
    EXPECT_EQ(loader.position().cursor, served * 4);
  }
}

// --- registry ------------------------------------------------------------------------------

TEST(DatasetRegistry, SyntheticLoadsAndTrains) {
  DatasetSpec spec;
  spec.name = "synthetic";
  spec.synthetic_train = 100;
  spec.synthetic_test = 30;
  spec.seed = 5;
  spec.test_limit = 20;
  const LoadedDataset d = load_dataset(spec);
  EXPECT_EQ(d.train.name, "synthetic/train");
  EXPECT_EQ(d.train.count, 100);
  EXPECT_EQ(d.test.count, 20);
  EXPECT_EQ(d.train.channels, 3);
  EXPECT_EQ(d.train.height, 32);
  EXPECT_EQ(d.train.num_classes, 10);
  EXPECT_EQ(d.norm.mean.size(), 3u);
  EXPECT_NE(std::vector<uint8_t>(d.train.pixels.begin(), d.train.pixels.begin() + 3072),
            std::vector<uint8_t>(d.test.pixels.begin(), d.test.pixels.begin() + 3072));
  EXPECT_EQ(load_dataset(spec).train.pixels, d.train.pixels);

  ShardedLoader loader(d.train, d.norm, d.train_aug, 16, 0, 1, 0, true, true);
  Batch b;
  ASSERT_TRUE(loader.next(b));
  EXPECT_EQ(b.images.sizes(), (std::vector<int64_t>{16, 3, 32, 32}));
  EXPECT_LT(b.images.mean().abs().item<float>(), 0.5f);
}

TEST(DatasetRegistry, UnknownNameListsKnownOnes) {
  DatasetSpec spec;
  spec.name = "cifar11";
  try {
    load_dataset(spec);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    for (const auto& info : dataset_catalog())
      EXPECT_NE(message.find(info.name), std::string::npos) << message;
    EXPECT_NE(message.find("cifar11"), std::string::npos);
  }
  std::vector<std::string> names;
  for (const auto& info : dataset_catalog()) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cifar10", "cifar100", "mnist", "fashion-mnist",
                                             "imagenet-folder", "synthetic", "synthetic-regression",
                                             "sign-counterexample"}));
}

TEST(DatasetRegistry, RealFormatsFromWrittenFiles) {
  testdata::TempDir tmp("registry");
  // CIFAR-10: 5 training batches of 3 images, a test batch of 2.
  for (int b = 1; b <= 5; ++b)
    testdata::write_cifar10_batch(tmp.path() / ("data_batch_" + std::to_string(b) + ".bin"),
                                  std::vector<uint8_t>(3 * 3072, static_cast<uint8_t>(b)),
                                  {1, 2, 3});
  testdata::write_cifar10_batch(tmp.path() / "test_batch.bin", std::vector<uint8_t>(2 * 3072, 9),
                                {4, 5});
  DatasetSpec spec;
  spec.name = "cifar10";
  spec.root = tmp.str();
  spec.train_limit = 7;
  LoadedDataset d = load_dataset(spec);
  EXPECT_EQ(d.train.count, 7);
  EXPECT_EQ(d.test.count, 2);
  EXPECT_EQ(d.train_aug.pad_crop, 4);
  EXPECT_TRUE(d.train_aug.hflip);
  EXPECT_FLOAT_EQ(d.norm.mean[0], 0.4914f);
  spec.augment = false;
  d = load_dataset(spec);
  EXPECT_EQ(d.train_aug.pad_crop, 0);
  EXPECT_FALSE(d.train_aug.hflip);

  // Fashion-MNIST layout (gzipped IDX).
  const fs::path fm = tmp.path() / "fm";
  testdata::write_idx_images(fm / "train-images-idx3-ubyte.gz", std::vector<uint8_t>(3 * 784, 7), 3,
                             28, 28, true);
  testdata::write_idx_labels(fm / "train-labels-idx1-ubyte.gz", {0, 1, 2}, true);
  testdata::write_idx_images(fm / "t10k-images-idx3-ubyte.gz", std::vector<uint8_t>(784, 7), 1, 28,
                             28, true);
  testdata::write_idx_labels(fm / "t10k-labels-idx1-ubyte.gz", {9}, true);
  spec = DatasetSpec{};
  spec.root = fm.string();
  d = load_dataset(spec);
  EXPECT_EQ(d.train.name, "fashion-mnist/train");
  EXPECT_EQ(d.train.count, 3);
  EXPECT_EQ(d.test.labels, (std::vector<int64_t>{9}));
  EXPECT_FLOAT_EQ(d.norm.mean[0], 0.2860f);
  EXPECT_FLOAT_EQ(d.norm.std[0], 0.3530f);
  EXPECT_EQ(d.train_aug.pad_crop, 0);

  // ImageFolder: train and val with the same classes.
  const fs::path inet = tmp.path() / "inet";
  for (const char* split : {"train", "val"})
    testdata::write_image_folder(inet, split, {{"n1", {{9, 9, 9}, {8, 8, 8}}}, {"n2", {{7, 7, 7}}}},
                                 20, 30);
  spec = DatasetSpec{};
  spec.name = "imagenet-folder";
  EXPECT_THROW(load_dataset(spec), std::invalid_argument);  // root required
  spec.root = inet.string();
  d = load_dataset(spec);
  EXPECT_EQ(d.train.count, 3);
  EXPECT_EQ(d.train.height, 64);
  EXPECT_EQ(d.train_aug.pad_crop, 8);
  EXPECT_FLOAT_EQ(d.norm.std[2], 0.225f);
  // Lazy decoding keeps the files; train_limit still applies.
  spec.lazy_decode = true;
  spec.train_limit = 2;
  d = load_dataset(spec);
  EXPECT_FALSE(d.train.in_memory());
  EXPECT_FALSE(d.test.in_memory());
  EXPECT_EQ(d.train.count, 2);
  EXPECT_EQ(d.train.labels, (std::vector<int64_t>{0, 0}));
  spec.lazy_decode = false;
  spec.train_limit = 0;
  testdata::write_solid_jpeg(inet / "val" / "n3" / "a.JPEG", 8, 8, {1, 1, 1});
  EXPECT_THROW(load_dataset(spec), DataError);  // val has a class train lacks
  DatasetSpec cifar;
  cifar.name = "cifar10";
  cifar.lazy_decode = true;
  EXPECT_THROW(load_dataset(cifar), std::invalid_argument);  // only ImageFolder sets are files
}

}  // namespace
}  // namespace cedar
