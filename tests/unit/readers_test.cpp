// Readers against files of known content written in the real formats (tests/unit/testdata_writers).
#include "datasets/readers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/testdata_writers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;
using testdata::TempDir;
using testdata::write_cifar100_file;
using testdata::write_cifar10_batch;
using testdata::write_idx_images;
using testdata::write_idx_labels;

// Pixel value of image i, channel c, row y, column x in the CIFAR fixtures.
uint8_t cifar_value(int64_t i, int64_t c, int64_t y, int64_t x) {
  return static_cast<uint8_t>((i * 37 + c * 101 + y * 7 + x * 3) & 0xff);
}

std::vector<uint8_t> cifar_pixels(int64_t first, int64_t n) {
  std::vector<uint8_t> px;
  for (int64_t i = first; i < first + n; ++i)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < 32; ++y)
        for (int64_t x = 0; x < 32; ++x) px.push_back(cifar_value(i, c, y, x));
  return px;
}

// Expects `fn` to throw DataError whose message contains every string in `parts`.
template <typename Fn>
void expect_data_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected DataError";
  } catch (const DataError& e) {
    if (std::getenv("CEDAR_SHOW_ERRORS") != nullptr) std::printf("  DataError: %s\n", e.what());
    for (const auto& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message '" << e.what() << "' lacks '" << part << "'";
  }
}

// Five training batches of 2 images (global index 0..9) and a test batch of 3 (100..102).
void write_cifar10_tree(const fs::path& dir) {
  for (int b = 0; b < 5; ++b)
    write_cifar10_batch(
        dir / ("data_batch_" + std::to_string(b + 1) + ".bin"), cifar_pixels(2 * b, 2),
        {static_cast<uint8_t>((2 * b) % 10), static_cast<uint8_t>((2 * b + 1) % 10)});
  write_cifar10_batch(dir / "test_batch.bin", cifar_pixels(100, 3), {9, 0, 4});
}

TEST(CifarReader, ReadsChannelPlanesAndLabelsFromAllBatches) {
  TempDir tmp("cifar10");
  write_cifar10_tree(tmp.path() / "cifar-10-batches-bin");
  for (const std::string& root : {tmp.str(), (tmp.path() / "cifar-10-batches-bin").string()}) {
    const ImageSet train = read_cifar(root, 10, true);
    ASSERT_EQ(train.count, 10);
    EXPECT_EQ(train.channels, 3);
    EXPECT_EQ(train.height, 32);
    EXPECT_EQ(train.width, 32);
    EXPECT_EQ(train.num_classes, 10);
    ASSERT_EQ(train.pixels.size(), 10u * 3072u);
    for (int64_t i = 0; i < 10; ++i) {
      EXPECT_EQ(train.labels[static_cast<size_t>(i)], i % 10);
      const uint8_t* img = train.image(i);
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t y : {0, 5, 31})
          for (int64_t x : {0, 17, 31})
            ASSERT_EQ(img[(c * 32 + y) * 32 + x], cifar_value(i, c, y, x)) << i << c << y << x;
    }
  }
  const ImageSet test = read_cifar(tmp.str(), 10, false);
  ASSERT_EQ(test.count, 3);
  EXPECT_EQ(test.labels, (std::vector<int64_t>{9, 0, 4}));
  EXPECT_EQ(test.pixels, cifar_pixels(100, 3));
}

TEST(CifarReader, LimitKeepsFirstRecords) {
  TempDir tmp("cifar10_limit");
  write_cifar10_tree(tmp.path());
  const ImageSet train = read_cifar(tmp.str(), 10, true, 3);
  ASSERT_EQ(train.count, 3);
  EXPECT_EQ(train.labels, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(train.pixels, cifar_pixels(0, 3));
}

TEST(CifarReader, Cifar100UsesFineLabel) {
  TempDir tmp("cifar100");
  const fs::path dir = tmp.path() / "cifar-100-binary";
  write_cifar100_file(dir / "train.bin", cifar_pixels(0, 2), {5, 19}, {77, 99});
  write_cifar100_file(dir / "test.bin", cifar_pixels(7, 1), {0}, {3});
  const ImageSet train = read_cifar(tmp.str(), 100, true);
  ASSERT_EQ(train.count, 2);
  EXPECT_EQ(train.num_classes, 100);
  EXPECT_EQ(train.labels, (std::vector<int64_t>{77, 99}));
  EXPECT_EQ(train.pixels, cifar_pixels(0, 2));
  const ImageSet test = read_cifar(dir.string(), 100, false);
  EXPECT_EQ(test.labels, (std::vector<int64_t>{3}));
  EXPECT_EQ(test.pixels, cifar_pixels(7, 1));
}

TEST(CifarReader, TruncatedFileNamesPathAndRecordSize) {
  TempDir tmp("cifar10_trunc");
  write_cifar10_tree(tmp.path());
  const fs::path file = tmp.path() / "data_batch_3.bin";
  fs::resize_file(file, fs::file_size(file) - 1);
  expect_data_error([&] { read_cifar(tmp.str(), 10, true); }, {file.string(), "3073"});
}

TEST(CifarReader, MissingFileNamesPath) {
  TempDir tmp("cifar10_missing");
  write_cifar10_tree(tmp.path());
  fs::remove(tmp.path() / "data_batch_5.bin");
  expect_data_error([&] { read_cifar(tmp.str(), 10, true); },
                    {(tmp.path() / "data_batch_5.bin").string(), "missing"});
  expect_data_error([&] { read_cifar(tmp.str(), 100, false); }, {"test.bin", "missing"});
}

TEST(CifarReader, LabelOutOfRange) {
  TempDir tmp("cifar10_label");
  write_cifar10_tree(tmp.path());
  write_cifar10_batch(tmp.path() / "test_batch.bin", cifar_pixels(0, 2), {3, 10});
  expect_data_error([&] { read_cifar(tmp.str(), 10, false); },
                    {(tmp.path() / "test_batch.bin").string(), "label 10"});
}

// --- IDX -----------------------------------------------------------------------------------

std::vector<uint8_t> idx_pixels(int n, int rows, int cols) {
  std::vector<uint8_t> px;
  for (int i = 0; i < n * rows * cols; ++i) px.push_back(static_cast<uint8_t>((i * 13 + 5) & 0xff));
  return px;
}

TEST(IdxReader, RawAndGzipReadBack) {
  TempDir tmp("idx");
  for (const bool gz : {false, true}) {
    const std::string suffix = gz ? ".gz" : "";
    const fs::path images = tmp.path() / ("img" + suffix), labels = tmp.path() / ("lab" + suffix);
    write_idx_images(images, idx_pixels(3, 4, 5), 3, 4, 5, gz);
    write_idx_labels(labels, {7, 0, 9}, gz);
    const ImageSet set = read_idx(images.string(), labels.string());
    ASSERT_EQ(set.count, 3) << suffix;
    EXPECT_EQ(set.channels, 1);
    EXPECT_EQ(set.height, 4);
    EXPECT_EQ(set.width, 5);
    EXPECT_EQ(set.num_classes, 10);
    EXPECT_EQ(set.pixels, idx_pixels(3, 4, 5));
    EXPECT_EQ(set.labels, (std::vector<int64_t>{7, 0, 9}));
    const ImageSet first = read_idx(images.string(), labels.string(), 2);
    ASSERT_EQ(first.count, 2);
    EXPECT_EQ(first.pixels, idx_pixels(2, 4, 5));
  }
}

TEST(IdxReader, MnistDirFindsGzippedAndRawNames) {
  TempDir tmp("mnist_dir");
  write_idx_images(tmp.path() / "train-images-idx3-ubyte.gz", idx_pixels(4, 28, 28), 4, 28, 28,
                   true);
  write_idx_labels(tmp.path() / "train-labels-idx1-ubyte.gz", {1, 2, 3, 4}, true);
  write_idx_images(tmp.path() / "t10k-images-idx3-ubyte", idx_pixels(2, 28, 28), 2, 28, 28, false);
  write_idx_labels(tmp.path() / "t10k-labels-idx1-ubyte", {5, 6}, false);
  const ImageSet train = read_mnist_dir(tmp.str(), true);
  EXPECT_EQ(train.count, 4);
  EXPECT_EQ(train.labels, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(train.pixels, idx_pixels(4, 28, 28));
  const ImageSet test = read_mnist_dir(tmp.str(), false);
  EXPECT_EQ(test.count, 2);
  EXPECT_EQ(test.pixels, idx_pixels(2, 28, 28));
}

TEST(IdxReader, Errors) {
  TempDir tmp("idx_errors");
  const fs::path images = tmp.path() / "images.gz", labels = tmp.path() / "labels";
  write_idx_labels(labels, {1, 2, 3}, false);

  write_idx_images(images, idx_pixels(3, 2, 2), 3, 2, 2, true, 0x00000801);  // wrong magic
  expect_data_error([&] { read_idx(images.string(), labels.string()); },
                    {images.string(), "magic 0x00000801", "0x00000803"});

  write_idx_images(images, idx_pixels(2, 2, 2), 2, 2, 2, true);  // 2 images, 3 labels
  expect_data_error([&] { read_idx(images.string(), labels.string()); },
                    {images.string(), labels.string(), "2 images", "3 labels"});

  write_idx_images(images, idx_pixels(2, 2, 2), 3, 2, 2, true);  // header says 3
  expect_data_error([&] { read_idx(images.string(), labels.string()); },
                    {images.string(), "truncated"});

  write_idx_images(images, idx_pixels(3, 2, 2), 3, 2, 2, false);
  write_idx_labels(labels, {1, 12, 3}, true);
  expect_data_error([&] { read_idx(images.string(), labels.string()); }, {labels.string(), "12"});

  const fs::path missing = tmp.path() / "nope";
  expect_data_error([&] { read_idx(missing.string(), labels.string()); }, {missing.string()});
  expect_data_error([&] { read_mnist_dir(tmp.str(), true); },
                    {(tmp.path() / "train-images-idx3-ubyte").string()});
}

TEST(IdxReader, RealFashionMnist) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " not present";
  const auto start = std::chrono::steady_clock::now();
  const ImageSet train = read_mnist_dir(root, true);
  const ImageSet test = read_mnist_dir(root, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info     ] Fashion-MNIST train+test read in %.3f s\n", seconds);
  EXPECT_EQ(train.count, 60000);
  EXPECT_EQ(test.count, 10000);
  for (const ImageSet* set : {&train, &test}) {
    EXPECT_EQ(set->height, 28);
    EXPECT_EQ(set->width, 28);
    EXPECT_EQ(set->channels, 1);
    std::vector<int64_t> per_class(10, 0);
    for (int64_t label : set->labels) ++per_class[static_cast<size_t>(label)];
    for (int64_t n : per_class) EXPECT_EQ(n, set->count / 10);  // Fashion-MNIST is balanced
  }
}

// --- ImageFolder ---------------------------------------------------------------------------

void expect_colour(const ImageSet& set, int64_t i, std::array<uint8_t, 3> colour, int tolerance) {
  const int64_t plane = set.height * set.width;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t p = 0; p < plane; p += 7)
      ASSERT_NEAR(set.image(i)[c * plane + p], colour[static_cast<size_t>(c)], tolerance)
          << "image " << i << " channel " << c << " pixel " << p;
}

TEST(ImageFolderReader, SortedClassesLimitsAndColours) {
  TempDir tmp("imagefolder");
  const std::array<uint8_t, 3> red{200, 30, 40}, green{20, 180, 60}, blue{10, 40, 220};
  // Written out of order; the reader must sort class folders and files.
  testdata::write_image_folder(
      tmp.path(), "train", {{"n03", {blue}}, {"n01", {red, green, blue}}, {"n02", {green, red}}},
      40, 24);
  testdata::write_bytes(tmp.path() / "train" / "n01" / "README.txt", {'h', 'i'});
  const ImageSet all = read_image_folder(tmp.str(), "train", 0, 0, 16);
  ASSERT_EQ(all.count, 6);
  EXPECT_EQ(all.num_classes, 3);
  EXPECT_EQ(all.channels, 3);
  EXPECT_EQ(all.height, 16);
  EXPECT_EQ(all.width, 16);
  EXPECT_EQ(all.class_names, (std::vector<std::string>{"n01", "n02", "n03"}));
  EXPECT_EQ(all.labels, (std::vector<int64_t>{0, 0, 0, 1, 1, 2}));
  ASSERT_EQ(all.pixels.size(), 6u * 3u * 16u * 16u);
  const std::vector<std::array<uint8_t, 3>> expected{red, green, blue, green, red, blue};
  for (int64_t i = 0; i < 6; ++i) expect_colour(all, i, expected[static_cast<size_t>(i)], 4);

  const ImageSet some = read_image_folder(tmp.str(), "train", 2, 2, 8);
  ASSERT_EQ(some.count, 4);
  EXPECT_EQ(some.num_classes, 2);
  EXPECT_EQ(some.labels, (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(some.height, 8);
  expect_colour(some, 1, green, 4);
  expect_colour(some, 3, red, 4);
}

TEST(ImageFolderReader, LowercaseJpgAndLargeImageDownscale) {
  TempDir tmp("imagefolder_jpg");
  const std::array<uint8_t, 3> colour{90, 160, 30};
  testdata::write_solid_jpeg(tmp.path() / "val" / "a" / "x.jpg", 300, 220, colour);
  const ImageSet set = read_image_folder(tmp.str(), "val", 0, 0, 20);
  ASSERT_EQ(set.count, 1);
  expect_colour(set, 0, colour, 4);
}

TEST(ImageFolderReader, ResizesShorterSideAndCentreCrops) {
  TempDir tmp("imagefolder_crop");
  // 64x32: the left 32 columns red, the right 32 blue. Shorter side 32 -> 16 gives 32x16; the
  // centre 16x16 crop covers source columns 16..47, so red | blue meet in the middle.
  const int w = 64, h = 32;
  std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = rgb.data() + (y * w + x) * 3;
      p[0] = x < 32 ? 255 : 0;
      p[2] = x < 32 ? 0 : 255;
    }
  testdata::write_jpeg(tmp.path() / "train" / "c" / "img.JPEG", rgb, w, h);
  const ImageSet set = read_image_folder(tmp.str(), "train", 0, 0, 16);
  ASSERT_EQ(set.count, 1);
  const uint8_t* img = set.image(0);
  const int plane = 16 * 16;
  for (int y : {0, 8, 15}) {
    EXPECT_GT(img[0 * plane + y * 16 + 2], 230);  // red on the left
    EXPECT_LT(img[2 * plane + y * 16 + 2], 25);
    EXPECT_LT(img[0 * plane + y * 16 + 13], 25);  // blue on the right
    EXPECT_GT(img[2 * plane + y * 16 + 13], 230);
  }
}

TEST(ImageFolderReader, Errors) {
  TempDir tmp("imagefolder_errors");
  expect_data_error([&] { read_image_folder(tmp.str(), "train", 0, 0, 8); },
                    {(tmp.path() / "train").string()});
  fs::create_directories(tmp.path() / "train");
  expect_data_error([&] { read_image_folder(tmp.str(), "train", 0, 0, 8); },
                    {(tmp.path() / "train").string(), "no class"});
  testdata::write_solid_jpeg(tmp.path() / "train" / "a" / "ok.JPEG", 16, 16, {1, 2, 3});
  fs::create_directories(tmp.path() / "train" / "b");
  expect_data_error([&] { read_image_folder(tmp.str(), "train", 0, 0, 8); },
                    {(tmp.path() / "train" / "b").string()});

  // Not a JPEG at all.
  const fs::path garbage = tmp.path() / "train" / "b" / "bad.JPEG";
  testdata::write_bytes(garbage, std::vector<uint8_t>(100, 0x42));
  expect_data_error([&] { read_image_folder(tmp.str(), "train", 0, 0, 8); }, {garbage.string()});

  // A real JPEG cut in half.
  std::vector<uint8_t> rgb(64 * 64 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 31);
  std::vector<uint8_t> jpeg = testdata::encode_jpeg(rgb, 64, 64);
  jpeg.resize(jpeg.size() / 2);
  testdata::write_bytes(garbage, jpeg);
  expect_data_error([&] { read_image_folder(tmp.str(), "train", 0, 0, 8); }, {garbage.string()});
}

// A textured w x h RGB image (gradients and a checker), so resizing and cropping show.
std::vector<uint8_t> textured(int w, int h, int seed) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = rgb.data() + (y * w + x) * 3;
      p[0] = static_cast<uint8_t>(x * 255 / w + seed * 17);
      p[1] = static_cast<uint8_t>(y * 255 / h + seed * 5);
      p[2] = static_cast<uint8_t>(((x / 3 + y / 5 + seed) % 2) * 200 + 20);
    }
  return rgb;
}

TEST(ImageFolderReader, LazySetDecodesBitwiseAsTheEagerReader) {
  TempDir tmp("imagefolder_lazy");
  // Landscape, portrait, square and larger-than-needed images: every resize and crop path.
  const std::vector<std::pair<int, int>> sizes{{48, 30}, {30, 52}, {40, 40}, {130, 90}, {20, 24}};
  for (size_t k = 0; k < sizes.size(); ++k) {
    const auto [w, h] = sizes[k];
    const std::string cls = k % 2 ? "n02" : "n01";
    testdata::write_jpeg(tmp.path() / "train" / cls / ("img" + std::to_string(k) + ".JPEG"),
                         textured(w, h, static_cast<int>(k)), w, h);
  }
  for (int64_t side : {16, 24}) {
    const ImageSet eager = read_image_folder(tmp.str(), "train", 0, 0, side);
    const ImageSet lazy = index_image_folder(tmp.str(), "train", 0, 0, side);
    ASSERT_FALSE(lazy.in_memory());
    EXPECT_TRUE(lazy.pixels.empty());
    EXPECT_EQ(lazy.count, eager.count);
    EXPECT_EQ(lazy.labels, eager.labels);
    EXPECT_EQ(lazy.class_names, eager.class_names);
    EXPECT_EQ(lazy.image_bytes(), eager.image_bytes());
    std::vector<uint8_t> got(static_cast<size_t>(lazy.image_bytes()));
    for (int64_t i = eager.count - 1; i >= 0; --i) {  // any order: each image on its own
      lazy.copy_image(i, got.data());
      EXPECT_TRUE(std::equal(got.begin(), got.end(), eager.image(i))) << "image " << i;
    }
  }
  // The subset arguments select the same files.
  const ImageSet eager = read_image_folder(tmp.str(), "train", 1, 2, 16);
  const ImageSet lazy = index_image_folder(tmp.str(), "train", 1, 2, 16);
  ASSERT_EQ(lazy.count, 2);
  EXPECT_EQ(lazy.labels, eager.labels);
  std::vector<uint8_t> got(static_cast<size_t>(lazy.image_bytes()));
  lazy.copy_image(1, got.data());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), eager.image(1)));
}

TEST(ImageFolderReader, LazySetNamesAnUndecodableFileWhenItIsRead) {
  TempDir tmp("imagefolder_lazy_bad");
  testdata::write_solid_jpeg(tmp.path() / "train" / "a" / "a0.JPEG", 16, 16, {1, 2, 3});
  const fs::path garbage = tmp.path() / "train" / "a" / "a1.JPEG";
  testdata::write_bytes(garbage, std::vector<uint8_t>(100, 0x42));
  expect_data_error([&] { read_image_folder(tmp.str(), "train", 0, 0, 8); }, {garbage.string()});
  const ImageSet lazy = index_image_folder(tmp.str(), "train", 0, 0, 8);  // listing only
  ASSERT_EQ(lazy.count, 2);
  std::vector<uint8_t> got(static_cast<size_t>(lazy.image_bytes()));
  lazy.copy_image(0, got.data());
  expect_data_error([&] { lazy.copy_image(1, got.data()); },
                    {garbage.string(), "not a readable JPEG"});
  // The listing's own checks stay at load time.
  fs::create_directories(tmp.path() / "train" / "b");
  expect_data_error([&] { index_image_folder(tmp.str(), "train", 0, 0, 8); },
                    {(tmp.path() / "train" / "b").string()});
}

// --- Synthetic -----------------------------------------------------------------------------

TEST(Synthetic, DeterministicBalancedAndSeparable) {
  const ImageSet a = make_synthetic(200, 3, 12, 4, 7);
  const ImageSet b = make_synthetic(200, 3, 12, 4, 7);
  const ImageSet c = make_synthetic(200, 3, 12, 4, 8);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.pixels, c.pixels);
  ASSERT_EQ(a.pixels.size(), 200u * 3u * 12u * 12u);
  for (int64_t i = 0; i < a.count; ++i) EXPECT_EQ(a.labels[static_cast<size_t>(i)], i % 4);

  // Nearest class mean (from the first half) classifies the second half almost perfectly.
  const int64_t d = a.image_bytes();
  std::vector<double> means(static_cast<size_t>(4 * d), 0.0);
  for (int64_t i = 0; i < 100; ++i)
    for (int64_t p = 0; p < d; ++p)
      means[static_cast<size_t>(a.labels[static_cast<size_t>(i)] * d + p)] += a.image(i)[p] / 25.0;
  int correct = 0;
  for (int64_t i = 100; i < 200; ++i) {
    int64_t best = -1;
    double best_dist = 0;
    for (int64_t k = 0; k < 4; ++k) {
      double dist = 0;
      for (int64_t p = 0; p < d; ++p) {
        const double diff = a.image(i)[p] - means[static_cast<size_t>(k * d + p)];
        dist += diff * diff;
      }
      if (best < 0 || dist < best_dist) best = k, best_dist = dist;
    }
    correct += best == a.labels[static_cast<size_t>(i)];
  }
  EXPECT_GE(correct, 95);
}

}  // namespace
}  // namespace cedar
