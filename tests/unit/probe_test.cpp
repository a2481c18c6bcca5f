// The readers' probes (datasets/readers.h): on good files they tell the shape the reader then
// loads, without decoding; on files whose listing, header or size is wrong they report every
// such file by name, as the reader's first error would name it.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/readers.h"
#include "tests/unit/testdata_writers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;
using testdata::TempDir;

std::vector<uint8_t> bytes(size_t n, int seed = 0) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + static_cast<size_t>(seed));
  return v;
}

void write_cifar10(const fs::path& dir, const std::vector<int>& records_per_train_file) {
  for (size_t f = 0; f < records_per_train_file.size(); ++f) {
    const auto n = static_cast<size_t>(records_per_train_file[f]);
    testdata::write_cifar10_batch(dir / ("data_batch_" + std::to_string(f + 1) + ".bin"),
                                  bytes(n * 3072, static_cast<int>(f)), std::vector<uint8_t>(n, 7));
  }
  testdata::write_cifar10_batch(dir / "test_batch.bin", bytes(3 * 3072), {1, 2, 3});
}

void write_mnist(const fs::path& dir, uint32_t train, uint32_t test, bool gzip) {
  const char* ext = gzip ? ".gz" : "";
  for (auto [prefix, n] : {std::pair<std::string, uint32_t>{"train", train}, {"t10k", test}}) {
    testdata::write_idx_images(dir / (prefix + "-images-idx3-ubyte" + ext), bytes(n * 28 * 28), n,
                               28, 28, gzip);
    testdata::write_idx_labels(dir / (prefix + "-labels-idx1-ubyte" + ext),
                               std::vector<uint8_t>(n, 3), gzip);
  }
}

void expect_same_shape(const ProbeResult& probe, const ImageSet& set) {
  ASSERT_TRUE(probe.ok()) << probe.problems.front();
  EXPECT_EQ(probe.shape.count, set.count);
  EXPECT_EQ(probe.shape.channels, set.channels);
  EXPECT_EQ(probe.shape.height, set.height);
  EXPECT_EQ(probe.shape.width, set.width);
  EXPECT_EQ(probe.shape.num_classes, set.num_classes);
}

// Whether some problem names every one of `parts`.
bool reported(const ProbeResult& probe, const std::vector<std::string>& parts) {
  for (const auto& p : probe.problems) {
    bool all = true;
    for (const auto& part : parts) all = all && p.find(part) != std::string::npos;
    if (all) return true;
  }
  return false;
}

std::string all_problems(const ProbeResult& probe) {
  std::string out;
  for (const auto& p : probe.problems) out += p + "\n";
  return out;
}

TEST(Probe, TellsTheShapeTheReaderLoads) {
  TempDir tmp("probe_good");
  write_cifar10(tmp.path() / "cifar", {2, 1, 3, 1, 2});
  for (int64_t limit : {0, 2, 4, 100}) {
    expect_same_shape(probe_cifar((tmp.path() / "cifar").string(), 10, true, limit),
                      read_cifar((tmp.path() / "cifar").string(), 10, true, limit));
  }
  expect_same_shape(probe_cifar((tmp.path() / "cifar").string(), 10, false),
                    read_cifar((tmp.path() / "cifar").string(), 10, false));
  for (bool gzip : {false, true}) {
    const fs::path dir = tmp.path() / (gzip ? "mnist-gz" : "mnist");
    write_mnist(dir, 5, 2, gzip);
    for (int64_t limit : {0, 3})
      expect_same_shape(probe_mnist_dir(dir.string(), true, limit),
                        read_mnist_dir(dir.string(), true, limit));
    expect_same_shape(probe_mnist_dir(dir.string(), false), read_mnist_dir(dir.string(), false));
  }
  testdata::write_image_folder(tmp.path() / "folder", "train",
                               {{"n01", {{{255, 0, 0}}, {{0, 255, 0}}}}, {"n02", {{{0, 0, 255}}}}},
                               40, 30);
  for (int64_t per_class : {0, 1}) {
    const ProbeResult probe =
        probe_image_folder((tmp.path() / "folder").string(), "train", 0, per_class, 16);
    const ImageSet set =
        read_image_folder((tmp.path() / "folder").string(), "train", 0, per_class, 16);
    expect_same_shape(probe, set);
    EXPECT_EQ(probe.shape.class_names, set.class_names);
  }
}

TEST(Probe, ReportsEveryBadCifarFile) {
  TempDir tmp("probe_cifar");
  write_cifar10(tmp.path(), {2, 2, 2, 2, 2});
  testdata::write_bytes(tmp.path() / "data_batch_2.bin", bytes(3073 + 100));  // truncated record
  testdata::write_bytes(tmp.path() / "data_batch_4.bin", {});
  const ProbeResult probe = probe_cifar(tmp.str(), 10, true);
  EXPECT_EQ(probe.problems.size(), 2u) << all_problems(probe);
  EXPECT_TRUE(reported(probe, {(tmp.path() / "data_batch_2.bin").string(), "3173 bytes"}))
      << all_problems(probe);
  EXPECT_TRUE(reported(probe, {(tmp.path() / "data_batch_4.bin").string(), "0 bytes"}))
      << all_problems(probe);
  // The reader stops reading once it has `limit` records: a later bad file does not stop it.
  EXPECT_TRUE(probe_cifar(tmp.str(), 10, true, 2).ok());

  fs::remove(tmp.path() / "data_batch_1.bin");
  fs::remove(tmp.path() / "data_batch_5.bin");
  const ProbeResult missing = probe_cifar(tmp.str(), 10, true);
  EXPECT_TRUE(reported(missing, {"missing files", (tmp.path() / "data_batch_1.bin").string(),
                                 (tmp.path() / "data_batch_5.bin").string()}))
      << all_problems(missing);
  try {
    read_cifar(tmp.str(), 10, true);
    ADD_FAILURE() << "read_cifar read a folder without data_batch_1.bin";
  } catch (const DataError& e) {  // the reader names both too
    EXPECT_NE(std::string(e.what()).find(missing.problems.front()), std::string::npos);
  }
}

TEST(Probe, ChecksIdxHeadersAndLengths) {
  TempDir tmp("probe_idx");
  write_mnist(tmp.path() / "magic", 4, 2, true);
  testdata::write_idx_images(tmp.path() / "magic" / "train-images-idx3-ubyte.gz",
                             bytes(4 * 28 * 28), 4, 28, 28, true, 0x00000804);
  const ProbeResult magic = probe_mnist_dir((tmp.path() / "magic").string(), true);
  EXPECT_TRUE(reported(magic, {(tmp.path() / "magic" / "train-images-idx3-ubyte.gz").string(),
                               "magic 0x00000804, expected 0x00000803"}))
      << all_problems(magic);

  // A raw file one byte short, and a gzip stream cut short: the header is intact in both, the
  // length gives them away (the raw file's size; the gzip trailer's ISIZE, which disagrees).
  write_mnist(tmp.path() / "short", 4, 2, false);
  const fs::path raw = tmp.path() / "short" / "train-images-idx3-ubyte";
  fs::resize_file(raw, fs::file_size(raw) - 1);
  const ProbeResult short_raw = probe_mnist_dir((tmp.path() / "short").string(), true);
  EXPECT_TRUE(reported(short_raw, {raw.string(), "expected 3136 image bytes", "found 3135"}))
      << all_problems(short_raw);
  write_mnist(tmp.path() / "cut", 40, 2, true);
  const fs::path gz = tmp.path() / "cut" / "train-images-idx3-ubyte.gz";
  fs::resize_file(gz, fs::file_size(gz) * 2 / 3);
  const ProbeResult cut = probe_mnist_dir((tmp.path() / "cut").string(), true);
  EXPECT_TRUE(reported(cut, {gz.string(), "is truncated: expected 31360 image bytes"}))
      << all_problems(cut);
  // Two gzip members inflate as one stream (the reader reads them as one); the trailer states
  // the last member's length alone, so the probe inflates to count before it judges.
  const fs::path two = tmp.path() / "members";
  write_mnist(two, 2, 2, true);
  auto two_members = [&](std::vector<uint8_t> idx) {
    std::vector<uint8_t> out = testdata::gzip_bytes({idx.begin(), idx.begin() + 10});
    const std::vector<uint8_t> rest = testdata::gzip_bytes({idx.begin() + 10, idx.end()});
    out.insert(out.end(), rest.begin(), rest.end());
    testdata::write_bytes(two / "train-images-idx3-ubyte.gz", out);
  };
  std::vector<uint8_t> idx = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2,
                              0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
  two_members(idx);
  expect_same_shape(probe_mnist_dir(two.string(), true), read_mnist_dir(two.string(), true));
  idx.push_back(9);
  two_members(idx);
  EXPECT_TRUE(reported(probe_mnist_dir(two.string(), true), {"has trailing data"}));

  // Counts that disagree, and the test split's missing label file, are reported too.
  write_mnist(tmp.path() / "counts", 4, 2, false);
  testdata::write_idx_labels(tmp.path() / "counts" / "train-labels-idx1-ubyte",
                             std::vector<uint8_t>(5, 1), false);
  EXPECT_TRUE(reported(probe_mnist_dir((tmp.path() / "counts").string(), true),
                       {"count mismatch", "4 images", "5 labels"}));
  fs::remove(tmp.path() / "counts" / "t10k-labels-idx1-ubyte");
  EXPECT_TRUE(reported(probe_mnist_dir((tmp.path() / "counts").string(), false),
                       {"missing file", "t10k-labels-idx1-ubyte"}));
  EXPECT_TRUE(reported(probe_mnist_dir((tmp.path() / "nowhere").string(), true),
                       {"missing dataset folder", (tmp.path() / "nowhere").string()}));
}

TEST(Probe, ChecksEveryJpegHeaderOfAnImageFolder) {
  TempDir tmp("probe_folder");
  testdata::write_image_folder(tmp.path(), "train",
                               {{"n01", {{{255, 0, 0}}, {{0, 255, 0}}}}, {"n02", {{{0, 0, 255}}}}},
                               24, 24);
  testdata::write_bytes(tmp.path() / "train" / "n01" / "png.JPEG",
                        {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0});
  testdata::write_bytes(tmp.path() / "train" / "n02" / "x_empty.jpg", {});
  const ProbeResult probe = probe_image_folder(tmp.str(), "train", 0, 0, 16);
  EXPECT_EQ(probe.problems.size(), 2u) << all_problems(probe);
  EXPECT_TRUE(reported(
      probe, {(tmp.path() / "train" / "n01" / "png.JPEG").string(), "not a readable JPEG"}))
      << all_problems(probe);
  EXPECT_TRUE(reported(probe, {(tmp.path() / "train" / "n02" / "x_empty.jpg").string()}))
      << all_problems(probe);
  // per_class 1 takes the first file of each class in name order: the bad ones are not read.
  EXPECT_TRUE(probe_image_folder(tmp.str(), "train", 0, 1, 16).ok());

  // Many bad files: the first few by name, then how many more.
  for (int i = 0; i < 8; ++i)
    testdata::write_bytes(tmp.path() / "train" / "n02" / ("z" + std::to_string(i) + ".JPEG"),
                          {0xff, 0xd8, 0xff, 0xd9});
  const ProbeResult many = probe_image_folder(tmp.str(), "train", 0, 0, 16);
  EXPECT_EQ(many.problems.size(), 6u) << all_problems(many);
  EXPECT_TRUE(reported(many, {"5 more unreadable JPEG files under"})) << all_problems(many);

  EXPECT_TRUE(reported(probe_image_folder(tmp.str(), "val", 0, 0, 16), {"missing split folder"}));
  EXPECT_TRUE(reported(probe_image_folder(tmp.str(), "train", 3, 0, 16),
                       {"has 2 class folders, fewer than the 3 asked for"}));
}

}  // namespace
}  // namespace cedar
