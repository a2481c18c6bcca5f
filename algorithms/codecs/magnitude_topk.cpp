#include "algorithms/codecs/magnitude_topk.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/codecs/magnitude_scan.h"

namespace cedar {
namespace {

// Below this k the pass starts with no floor: raising it as the pass goes costs less than a
// sample (about k·ln(n/k) pairs are collected).
constexpr int64_t kSampleFromK = 4096;
// The sample holds about this many of the top k (its stride is k / kSampleHits): the floor's
// relative error is about 1/sqrt(kSampleHits).
constexpr double kSampleHits = 256;
// Ranges of fewer elements are not split between threads.
constexpr int64_t kMinRange = int64_t{1} << 18;

// The r-th largest of keys[0, m) (1 <= r <= m, keys >= 0) and how many keys exceed it. A
// histogram of 2^11 bins over [min, max] finds the bin that holds it; nth_element runs on that
// bin's keys only. Reorders keys.
struct Rank {
  int32_t key;
  int64_t above;
};
Rank rank_of(int32_t* keys, int64_t m, int64_t r) {
  int32_t lo = keys[0], hi = keys[0];
  for (int64_t j = 1; j < m; ++j) {
    lo = std::min(lo, keys[j]);
    hi = std::max(hi, keys[j]);
  }
  if (lo == hi) return {lo, 0};
  constexpr int kBinBits = 11;
  const int span = 32 - __builtin_clz(static_cast<uint32_t>(hi - lo));
  const int shift = std::max(0, span - kBinBits);
  int32_t count[1 << kBinBits] = {};
  for (int64_t j = 0; j < m; ++j) ++count[(keys[j] - lo) >> shift];
  int64_t above = 0;
  int bin = (hi - lo) >> shift;
  for (; above + count[bin] < r; --bin) above += count[bin];
  int64_t in_bin = 0;  // the bin's keys, moved to the front
  for (int64_t j = 0; j < m; ++j)
    if (((keys[j] - lo) >> shift) == bin) keys[in_bin++] = keys[j];
  const int64_t at = r - above - 1;
  std::nth_element(keys, keys + at, keys + in_bin, std::greater<int32_t>());
  for (int64_t j = 0; j < at; ++j) above += keys[j] > keys[at];
  return {keys[at], above};
}

// Writes the first k (by the rule) of the m pairs (index[j], value[j]), ascending by index, to
// out_index / out_value in index order (they may be index / value: in place) and returns the
// k-th key. `keys` is scratch.
int32_t keep_first(const int32_t* index, const float* value, int64_t m, int64_t k,
                   std::vector<int32_t>& keys, int32_t* out_index, float* out_value) {
  keys.resize(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j) keys[static_cast<size_t>(j)] = magnitude_key(value[j]);
  const Rank kth = rank_of(keys.data(), m, k);
  int64_t ties = k - kth.above;  // the pairs with the k-th key that are kept: the first ones
  int64_t w = 0;
  for (int64_t j = 0; j < m; ++j) {
    const int32_t key = magnitude_key(value[j]);
    if (key > kth.key || (key == kth.key && ties-- > 0)) {
      out_index[w] = index[j];
      out_value[w] = value[j];
      ++w;
    }
  }
  return kth.key;
}

// Appends the pairs of x[begin, end) with key above `floor` to `out` (capacity `cap` > k) in
// index order, cutting them back to their first k whenever `cap` are held; the floor then rises
// to the k-th key held (a later pair must exceed it: on an equal key the held pair, with the lower
// index, ranks first). Inlined into collect_popcnt and collect_portable below.
template <class Pairs>
CEDAR_ALWAYS_INLINE void collect_pairs(const float* x, int64_t begin, int64_t end, int32_t floor,
                                       int64_t k, int64_t cap, Pairs& out) {
  out.hold(cap);
  out.size = 0;
  int32_t* index = out.index.data();
  float* value = out.value.data();
  for_each_above(x, begin, end, floor, [&](int64_t i) {
    index[out.size] = static_cast<int32_t>(i);
    value[out.size] = x[i];
    if (++out.size == cap) {
      floor = keep_first(index, value, cap, k, out.keys, index, value);
      out.size = k;
    }
  });
}

template <class Pairs>
CEDAR_POPCNT_TARGET void collect_popcnt(const float* x, int64_t begin, int64_t end, int32_t floor,
                                        int64_t k, int64_t cap, Pairs& out) {
  collect_pairs(x, begin, end, floor, k, cap, out);
}

template <class Pairs>
void collect_portable(const float* x, int64_t begin, int64_t end, int32_t floor, int64_t k,
                      int64_t cap, Pairs& out) {
  collect_pairs(x, begin, end, floor, k, cap, out);
}

// collect_pairs on this CPU: with POPCNT where it has it.
template <class Pairs>
void collect(const float* x, int64_t begin, int64_t end, int32_t floor, int64_t k, int64_t cap,
             Pairs& out) {
  (cpu_has_popcnt() ? collect_popcnt<Pairs> : collect_portable<Pairs>)(x, begin, end, floor, k, cap,
                                                                       out);
}

}  // namespace

void MagnitudeTopK::Pairs::hold(int64_t capacity) {
  if (static_cast<int64_t>(index.size()) >= capacity) return;
  index.resize(static_cast<size_t>(capacity));
  value.resize(static_cast<size_t>(capacity));
}

// A floor below the k-th key with high probability: the key of a strided sample's element ranked
// three standard deviations of the count below where the k-th would be, minus one. −1 (no floor)
// for small k.
int32_t MagnitudeTopK::sampled_floor(const float* x, int64_t n, int64_t k) {
  if (k < kSampleFromK) return -1;
  int64_t stride = static_cast<int64_t>(static_cast<double>(k) / kSampleHits);
  if (stride % 2 == 0) --stride;  // odd: no aliasing with power-of-two tensor dimensions
  const int64_t start = stride / 2, count = (n - start - 1) / stride + 1;
  sample_.resize(static_cast<size_t>(count));
  sample_keys_.resize(static_cast<size_t>(count));
  strided_magnitudes(x + start, count, stride, sample_.data());
  for (int64_t j = 0; j < count; ++j)
    sample_keys_[static_cast<size_t>(j)] = magnitude_key(sample_[j]);
  const double hits = static_cast<double>(count) * static_cast<double>(k) / static_cast<double>(n);
  const int64_t rank =
      std::min<int64_t>(count, static_cast<int64_t>(std::ceil(hits + 3.0 * std::sqrt(hits))));
  return rank_of(sample_keys_.data(), count, rank).key - 1;
}

// The pairs of x[0, n) above `floor` as collect() leaves them, x split into one range per thread.
MagnitudeTopK::Pairs& MagnitudeTopK::collect_ranges(const float* x, int64_t n, int64_t k,
                                                    int32_t floor) {
  const int64_t cap = k + std::max<int64_t>(k, 1024);
  const int64_t ranges =
      std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n / kMinRange));
  if (static_cast<int64_t>(ranges_.size()) < ranges) ranges_.resize(static_cast<size_t>(ranges));
  at::parallel_for(0, ranges, 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r)
      collect(x, r * n / ranges, (r + 1) * n / ranges, floor, k, cap,
              ranges_[static_cast<size_t>(r)]);
  });
  if (ranges == 1) return ranges_[0];
  int64_t total = 0;
  for (int64_t r = 0; r < ranges; ++r) total += ranges_[static_cast<size_t>(r)].size;
  joined_.hold(total);
  joined_.size = 0;
  for (int64_t r = 0; r < ranges; ++r) {
    const Pairs& p = ranges_[static_cast<size_t>(r)];
    std::copy(p.index.begin(), p.index.begin() + p.size, joined_.index.begin() + joined_.size);
    std::copy(p.value.begin(), p.value.begin() + p.size, joined_.value.begin() + joined_.size);
    joined_.size += p.size;
  }
  return joined_;
}

void MagnitudeTopK::select(const float* x, int64_t n, int64_t k, int32_t* index, float* value) {
  if (k < 0 || k > n || n > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("magnitude_topk: " + std::to_string(k) + " of " +
                                std::to_string(n) + " elements (needs 0 <= k <= n < 2^31)");
  if (k == 0) return;
  if (k == n) {
    for (int64_t i = 0; i < n; ++i) index[i] = static_cast<int32_t>(i);
    std::memcpy(value, x, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  int32_t floor = sampled_floor(x, n, k);
  for (;;) {
    Pairs& all = collect_ranges(x, n, k, floor);
    if (all.size > k) {
      keep_first(all.index.data(), all.value.data(), all.size, k, all.keys, index, value);
      return;
    }
    if (all.size == k) {
      std::copy(all.index.begin(), all.index.begin() + k, index);
      std::copy(all.value.begin(), all.value.begin() + k, value);
      return;
    }
    // Fewer than k above the sampled floor (rare): again with none, which every element passes.
    floor = -1;
  }
}

void magnitude_topk(const float* x, int64_t n, int64_t k, int32_t* index, float* value) {
  MagnitudeTopK().select(x, n, k, index, value);
}

}  // namespace cedar
