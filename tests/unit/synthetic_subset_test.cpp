// The synthetic set on a subset (datasets/synthetic.cpp, datasets/registry.cpp): the images a run
// keeps are drawn exactly as the whole set draws them, bitwise, without computing the others
// (their noise draws are skipped on the generator).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "datasets/loader.h"
#include "datasets/readers.h"

namespace cedar {
namespace {

std::vector<uint8_t> pixels_of(const ImageSet& set, int64_t first, int64_t end) {
  return {set.pixels.begin() + first * set.image_bytes(),
          set.pixels.begin() + end * set.image_bytes()};
}

// 3 x 5 x 5 = 75 noise draws per image, an odd number: the Box-Muller pair of the first kept
// pixel may straddle the previous image, and the range must start on the pair's second value.
TEST(SyntheticSubset, RangeIsTheWholeSetsSlice) {
  const ImageSet whole = make_synthetic(40, 3, 5, 7, 11);
  for (const auto& [first, end] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 40}, {0, 1}, {1, 2}, {1, 40}, {2, 9}, {13, 14}, {17, 40}, {39, 40}, {40, 40}}) {
    const ImageSet part = make_synthetic_range(first, end, 3, 5, 7, 11);
    ASSERT_EQ(part.count, end - first) << first << ".." << end;
    EXPECT_EQ(part.pixels, pixels_of(whole, first, end)) << first << ".." << end;
    EXPECT_EQ(part.labels,
              std::vector<int64_t>(whole.labels.begin() + first, whole.labels.begin() + end))
        << first << ".." << end;
    EXPECT_EQ(part.channels, 3);
    EXPECT_EQ(part.height, 5);
    EXPECT_EQ(part.num_classes, 7);
  }
  EXPECT_THROW(make_synthetic_range(5, 4, 3, 5, 7, 11), std::invalid_argument);
  EXPECT_THROW(make_synthetic_range(-1, 4, 3, 5, 7, 11), std::invalid_argument);
}

// Through the registry: the train and test sets of a limited spec are the first images of the
// unlimited spec's, whose test images follow all of the synthetic_train training images.
TEST(SyntheticSubset, LimitedDatasetIsThePrefixOfTheWhole) {
  DatasetSpec spec;
  spec.name = "synthetic";
  spec.image_size = 7;
  spec.num_classes = 5;
  spec.synthetic_train = 60;
  spec.synthetic_test = 30;
  spec.seed = 3;
  const LoadedDataset whole = load_dataset(spec);
  const ImageSet generated = make_synthetic(90, 3, 7, 5, 3);
  EXPECT_EQ(whole.train.pixels, pixels_of(generated, 0, 60));
  EXPECT_EQ(whole.test.pixels, pixels_of(generated, 60, 90));
  spec.train_limit = 21;
  spec.test_limit = 9;
  const LoadedDataset part = load_dataset(spec);
  ASSERT_EQ(part.train.count, 21);
  ASSERT_EQ(part.test.count, 9);
  EXPECT_EQ(part.train.pixels, pixels_of(whole.train, 0, 21));
  EXPECT_EQ(part.test.pixels, pixels_of(whole.test, 0, 9));
  EXPECT_EQ(part.test.labels,
            std::vector<int64_t>(whole.test.labels.begin(), whole.test.labels.begin() + 9));
  EXPECT_EQ(part.test.name, whole.test.name);
}

}  // namespace
}  // namespace cedar
