// The IDX reader with a limit (datasets/idx_reader.cpp): it inflates the images and labels it keeps
// and checks the rest of each file for its length only, so a run on a subset of a large gzipped
// set does not decode the whole set; every defect of a file's header or length is still reported,
// with the message a whole read gives.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/readers.h"
#include "tests/unit/testdata_writers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;
using testdata::TempDir;

// Pixels of `n` images of 28 x 28, each image's bytes its own (no image repeats another).
std::vector<uint8_t> pixels(uint32_t n) {
  std::vector<uint8_t> px;
  uint32_t state = 12345;
  for (uint32_t i = 0; i < n * 28 * 28; ++i) {
    state = state * 1664525u + 1013904223u;  // a linear congruential sequence (Numerical Recipes)
    px.push_back(static_cast<uint8_t>(state >> 24));
  }
  return px;
}

std::vector<uint8_t> be32(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

// An IDX images file's bytes: magic 0x00000803, the header's count, 28, 28, then `px`.
std::vector<uint8_t> images_file(uint32_t count, const std::vector<uint8_t>& px) {
  std::vector<uint8_t> out;
  for (uint32_t v : {0x00000803u, count, 28u, 28u})
    for (uint8_t b : be32(v)) out.push_back(b);
  out.insert(out.end(), px.begin(), px.end());
  return out;
}

std::vector<uint8_t> labels_file(uint32_t count) {
  std::vector<uint8_t> out;
  for (uint32_t v : {0x00000801u, count})
    for (uint8_t b : be32(v)) out.push_back(b);
  for (uint32_t i = 0; i < count; ++i) out.push_back(static_cast<uint8_t>(i % 10));
  return out;
}

std::string error_of(const fs::path& images, const fs::path& labels, int64_t limit) {
  try {
    read_idx(images.string(), labels.string(), limit);
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

// 12,000 images (9.4 MB inflated, more than zlib inflates ahead of a read) in one gzip stream
// whose deflate data is damaged near its end, its trailer intact: a whole read meets the damage;
// a read of the first 100 images never inflates that far and returns them exactly.
TEST(IdxSubset, ReadsOnlyTheImagesItKeeps) {
  TempDir tmp("idx_subset");
  constexpr uint32_t kCount = 12000;
  const std::vector<uint8_t> px = pixels(kCount);
  std::vector<uint8_t> gz = testdata::gzip_bytes(images_file(kCount, px));
  ASSERT_GT(gz.size(), 1000u);
  for (size_t i = gz.size() - 8 - 200; i < gz.size() - 8 - 100; ++i) gz[i] ^= 0x5a;
  const fs::path images = tmp.path() / "images.gz", labels = tmp.path() / "labels";
  testdata::write_bytes(images, gz);
  testdata::write_bytes(labels, labels_file(kCount));

  EXPECT_NE(error_of(images, labels, 0).find(images.string()), std::string::npos)
      << "a whole read must meet the damaged data: " << error_of(images, labels, 0);
  const ImageSet first = read_idx(images.string(), labels.string(), 100);
  ASSERT_EQ(first.count, 100);
  EXPECT_EQ(first.pixels, std::vector<uint8_t>(px.begin(), px.begin() + 100 * 28 * 28));
  ASSERT_EQ(first.labels.size(), 100u);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(first.labels[static_cast<size_t>(i)], i % 10);
}

// A file shorter or longer than its header says is refused with a limit too, raw or gzipped, and
// with a whole read's message: the limit spares the decoding, not the checks.
TEST(IdxSubset, LengthDefectsAreReportedWithALimit) {
  TempDir tmp("idx_subset_lengths");
  const fs::path labels = tmp.path() / "labels";
  testdata::write_bytes(labels, labels_file(50));
  struct Case {
    std::string what;
    std::vector<uint8_t> content;
    std::string message;
  };
  const std::vector<uint8_t> px = pixels(50);
  std::vector<uint8_t> longer = px;
  longer.push_back(7);
  const std::vector<Case> cases = {
      {"short", images_file(50, std::vector<uint8_t>(px.begin(), px.end() - 1)),
       "is truncated: expected 39200 image bytes after the header, found 39199"},
      {"long", images_file(50, longer), "has trailing data: expected 39200 image bytes"},
  };
  for (const Case& c : cases) {
    for (const bool gz : {false, true}) {
      const fs::path images = tmp.path() / (c.what + (gz ? ".gz" : ""));
      testdata::write_bytes(images, gz ? testdata::gzip_bytes(c.content) : c.content);
      for (const int64_t limit : {0, 10}) {
        const std::string error = error_of(images, labels, limit);
        EXPECT_NE(error.find(images.string()), std::string::npos) << error;
        EXPECT_NE(error.find(c.message), std::string::npos)
            << c.what << (gz ? " gzipped" : " raw") << ", limit " << limit << ": " << error;
      }
    }
  }
  // A gzip stream whose trailer states the wrong length but whose content is right (two members,
  // the trailer the second's) is inflated to its end to tell: it reads.
  const std::vector<uint8_t> whole = images_file(50, px);
  std::vector<uint8_t> two = testdata::gzip_bytes({whole.begin(), whole.begin() + 1000});
  const std::vector<uint8_t> rest = testdata::gzip_bytes({whole.begin() + 1000, whole.end()});
  two.insert(two.end(), rest.begin(), rest.end());
  testdata::write_bytes(tmp.path() / "two.gz", two);
  const ImageSet set = read_idx((tmp.path() / "two.gz").string(), labels.string(), 10);
  EXPECT_EQ(set.pixels, std::vector<uint8_t>(px.begin(), px.begin() + 10 * 28 * 28));
}

// Fashion-MNIST as Debian ships it: the first 1,000 test images and labels read with a limit are
// bitwise those of the whole read.
TEST(IdxSubset, RealFashionMnistPrefix) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " not present";
  const ImageSet all = read_mnist_dir(root, false);
  const ImageSet first = read_mnist_dir(root, false, 1000);
  ASSERT_EQ(first.count, 1000);
  EXPECT_EQ(first.name, all.name);
  EXPECT_EQ(first.pixels, std::vector<uint8_t>(all.pixels.begin(),
                                               all.pixels.begin() + 1000 * all.image_bytes()));
  EXPECT_EQ(first.labels, std::vector<int64_t>(all.labels.begin(), all.labels.begin() + 1000));
}

}  // namespace
}  // namespace cedar
