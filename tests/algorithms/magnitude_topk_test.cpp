// The exact top-k by magnitude (algorithms/codecs/magnitude_topk.h) against an oracle that sorts
// every (|x_i|, i) pair: random data at sizes on both sides of the sampling and threading
// thresholds, data full of ties (equal magnitudes go to the lower index), k = 1 and k = n, tiny
// tensors, a sample that misses (the pass runs again without a floor), magnitudes in ascending
// order (the floor rises while collecting), NaN and inf; and top-k's payload, byte for byte,
// against the torch::topk path it replaced on tie-free tensors.
#include "algorithms/codecs/magnitude_topk.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "algorithms/codecs/topk_codec.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::values_of;

using testing::randn_seeded;
using testing::same_bits;

// The oracle: sort every index by (|x_i| descending, i ascending), keep the first k, list them
// ascending. NaN-free x.
std::vector<int32_t> sorted_oracle(const std::vector<float>& x, int64_t k) {
  std::vector<std::pair<float, int32_t>> all;
  for (size_t i = 0; i < x.size(); ++i) all.push_back({std::fabs(x[i]), static_cast<int32_t>(i)});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<int32_t> idx;
  for (int64_t j = 0; j < k; ++j) idx.push_back(all[static_cast<size_t>(j)].second);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// magnitude_topk's indices, after checking that its values are x at them (bit for bit).
std::vector<int32_t> topk_of(const std::vector<float>& x, int64_t k) {
  std::vector<int32_t> idx(static_cast<size_t>(k));
  std::vector<float> val(static_cast<size_t>(k));
  magnitude_topk(x.data(), static_cast<int64_t>(x.size()), k, idx.data(), val.data());
  for (size_t j = 0; j < idx.size(); ++j) {
    EXPECT_GE(idx[j], 0);
    EXPECT_LT(idx[j], static_cast<int32_t>(x.size()));
    if (idx[j] < 0 || idx[j] >= static_cast<int32_t>(x.size())) break;
    EXPECT_EQ(std::memcmp(&val[j], &x[static_cast<size_t>(idx[j])], 4), 0) << "entry " << j;
  }
  return idx;
}

// The k values worth checking for n elements: both ends, the 1% of top-k's default, and around
// the size where sampling starts.
std::vector<int64_t> ks_for(int64_t n) {
  std::vector<int64_t> ks = {1, 2, n - 1, n, keep_count(n, 0.01), keep_count(n, 0.1), 4095, 4096};
  std::vector<int64_t> out;
  for (int64_t k : ks)
    if (k >= 1 && k <= n && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

// Sizes from tiny to above two threads' minimum range (2^18 elements each).
const int64_t kLengths[] = {1, 2, 3, 5, 31, 32, 33, 100, 1000, 5000, 70001, 600000};

TEST(MagnitudeTopK, MatchesTheSortOracleOnRandomData) {
  for (int64_t n : kLengths)
    for (int64_t k : ks_for(n)) {
      const std::vector<float> x = values_of(randn_seeded(n, static_cast<uint64_t>(n + k)));
      ASSERT_EQ(topk_of(x, k), sorted_oracle(x, k)) << n << " elements, k = " << k;
    }
}

TEST(MagnitudeTopK, EqualMagnitudesGoToTheLowerIndex) {
  // |1| = |-1| = |1|: the first two by index; ±0 are equal magnitudes.
  EXPECT_EQ(topk_of({1, -3, 3, 2, -3, 3}, 2), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(topk_of({1, -3, 3, 2, -3, 3}, 3), (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(topk_of({-0.0f, 0.0f, -0.0f, 0.5f}, 3), (std::vector<int32_t>{0, 1, 3}));
  for (int64_t n : kLengths) {
    const at::Tensor g = randn_seeded(n, static_cast<uint64_t>(7 * n));
    const std::vector<at::Tensor> tied = {
        at::ones({n}),                                           // one magnitude
        at::zeros({n}),                                          // nothing but zeros
        at::round(g * 2),                                        // a few magnitudes, both signs
        g * (at::arange(n) % 97 == 0).to(at::kFloat),            // mostly zeros
        at::where(g > 1.5, at::full({n}, -2.0f), at::ones({n}))  // two magnitudes
    };
    for (size_t d = 0; d < tied.size(); ++d) {
      const std::vector<float> x = values_of(tied[d]);
      for (int64_t k : ks_for(n))
        ASSERT_EQ(topk_of(x, k), sorted_oracle(x, k))
            << "data " << d << ", " << n << " elements, k = " << k;
    }
  }
}

// The sampled floor lies in the (strided) sample's positions only: made large there, it is above
// the k-th magnitude and too few pass, so the pass runs again without a floor. Magnitudes rising
// with the index make every element pass the floor until 2k are held, again and again.
TEST(MagnitudeTopK, SampleThatMissesAndRisingMagnitudes) {
  const int64_t n = 100000, k = 10000;
  std::vector<float> x = values_of(randn_seeded(n, 5));
  for (int64_t stride : {37, 39, 41})  // about k/256, odd: the sample's stride and neighbours
    for (int64_t i = stride / 2; i < n; i += stride) x[static_cast<size_t>(i)] = 100.0f + i;
  EXPECT_EQ(topk_of(x, k), sorted_oracle(x, k));
  for (int64_t m : {int64_t{5000}, int64_t{300000}}) {
    std::vector<float> rising(static_cast<size_t>(m)), falling(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) {
      rising[static_cast<size_t>(i)] = (i % 2 ? 1.0f : -1.0f) * static_cast<float>(i);
      falling[static_cast<size_t>(i)] = static_cast<float>(m - i / 3);
    }
    for (int64_t kk : {int64_t{1}, int64_t{17}, m / 100, m / 3}) {
      EXPECT_EQ(topk_of(rising, kk), sorted_oracle(rising, kk)) << m << ", k = " << kk;
      EXPECT_EQ(topk_of(falling, kk), sorted_oracle(falling, kk)) << m << ", k = " << kk;
    }
  }
}

// NaN ranks above +inf, which ranks above every finite magnitude (as in torch::topk).
TEST(MagnitudeTopK, NanAndInfRankFirst) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = values_of(randn_seeded(20000, 9));
  x[17] = -inf;
  x[4000] = nan;
  x[19999] = inf;
  EXPECT_EQ(topk_of(x, 1), (std::vector<int32_t>{4000}));
  EXPECT_EQ(topk_of(x, 3), (std::vector<int32_t>{17, 4000, 19999}));
  const std::vector<int32_t> many = topk_of(x, 5000);
  for (int32_t i : {17, 4000, 19999})
    EXPECT_TRUE(std::binary_search(many.begin(), many.end(), i)) << i;
}

// On tensors without equal magnitudes the payload is the one the torch::topk selection wrote:
// the indices of topk(|x|, k), sorted, then x at them.
TEST(MagnitudeTopK, PayloadBytesEqualTheTorchTopKPathWithoutTies) {
  for (int64_t n :
       {int64_t{1000}, int64_t{4099}, int64_t{70001}, int64_t{1} << 20, int64_t{3000000}})
    for (double ratio : {0.001, 0.01, 0.3}) {
      at::Tensor x = randn_seeded(n, static_cast<uint64_t>(n) + 11);
      const at::Tensor sorted = std::get<0>(at::sort(x.abs()));
      if (sorted.slice(0, 1).eq(sorted.slice(0, 0, n - 1)).any().item<bool>()) {
        // Distinct magnitudes by construction instead: a permutation of 1..n, random signs.
        at::Generator gen = make_generator(static_cast<uint64_t>(n), 0, 0);
        x = (at::randperm(n, gen) + 1).to(at::kFloat) * at::sign(x + 1e-30);
      }
      const int64_t k = keep_count(n, ratio);
      const at::Tensor idx =
          std::get<0>(at::sort(std::get<1>(at::topk(x.abs(), k, 0, true, false))));
      const at::Tensor expected = encode_sparse(idx, x.index_select(0, idx));
      TopKCompressor codec(ratio);
      at::Generator gen = make_generator(0, 0, 0);
      EXPECT_TRUE(same_bits(codec.compress(x, gen), expected)) << n << " elements, k = " << k;
      EXPECT_TRUE(at::equal(codec.select(x, gen), idx)) << n << " elements, k = " << k;
    }
}

}  // namespace
}  // namespace cedar
