#pragma once
// k distinct coordinates of [0, n) drawn uniformly without replacement from a 64-bit key, in
// ascending order: random-k's index set (algorithms/randomk.cpp).
//
// Definition. Integers: the 32-bit words w(key, 0), w(key, 1), ... of CounterUniforms
// (counter_rng.h) are taken in order; an integer uniform in [0, r) is Lemire's multiply-and-reject
// (D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS 2019): with m = w·r in 64
// bits, the draw is accepted when m mod 2^32 >= (2^32 − r) mod r and is then ⌊m / 2^32⌋; a rejected
// word is skipped. Every value of [0, r) is the image of the same number of accepted words, so
// there is no modulo bias. Subset: Floyd's algorithm (J. Bentley, R. Floyd, "A Sample of
// Brilliance", CACM 1987): for j = n − k, ..., n − 1, draw t in [0, j] and add t, or j when t is
// already in. Every k-subset comes out with probability 1 / C(n, k). The members are marked in a
// bitmap of n bits whose scan lists them ascending: O(k + n/64) time, n/8 bytes, no permutation of
// n.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/popcnt.h"

namespace cedar {

// The integers of the definition above, drawn one after another from CounterUniforms(key).
class CounterIntegers {
 public:
  explicit CounterIntegers(uint64_t key) : rng_(key) {}

  // Uniform in [0, range), 1 <= range.
  uint32_t below(uint32_t range) {
    uint64_t m = static_cast<uint64_t>(next_word()) * range;
    if (static_cast<uint32_t>(m) < range) {
      const uint32_t reject = static_cast<uint32_t>(0u - range) % range;  // (2^32 − r) mod r
      while (static_cast<uint32_t>(m) < reject) m = static_cast<uint64_t>(next_word()) * range;
    }
    return static_cast<uint32_t>(m >> 32);
  }

  // The next word of the stream (below() consumes one or more).
  uint32_t next_word() {
    if (pos_ == kBuffer) {
      rng_.words(drawn_, kBuffer, buffer_);
      drawn_ += kBuffer;
      pos_ = 0;
    }
    return buffer_[pos_++];
  }

 private:
  static constexpr int kBuffer = 256;
  CounterUniforms rng_;
  uint64_t drawn_ = 0;  // words fetched into the buffer so far
  int pos_ = kBuffer;
  uint32_t buffer_[kBuffer];
};

// Floyd's subset of k of [0, n) (k <= n < 2^32) with below(r) an integer in [0, r), written
// ascending to out[0, k). The definition above with another source of integers (tests use it to
// show what a biased one does). `bits` is the bitmap: all zero on entry and again on return (the
// scan clears each word it reads), so that a caller can keep it from call to call. Always inlined,
// so that a caller compiled for POPCNT counts each word in one instruction (popcnt.h).
template <class Below>
CEDAR_ALWAYS_INLINE void floyd_subset(int64_t n, int64_t k, Below&& below, int64_t* out,
                                      std::vector<uint64_t>& bits) {
  const size_t words = static_cast<size_t>((n + 63) / 64);
  if (bits.size() < words) bits.resize(words);
  for (int64_t j = n - k; j < n; ++j) {
    const int64_t t = static_cast<int64_t>(below(static_cast<uint32_t>(j + 1)));
    uint64_t& word = bits[static_cast<size_t>(t >> 6)];
    const uint64_t bit = uint64_t{1} << (t & 63);
    if (word & bit) {
      bits[static_cast<size_t>(j >> 6)] |= uint64_t{1} << (j & 63);
    } else {
      word |= bit;
    }
  }
  // The scan: two entries written per word whatever its count (no branch on the data, which
  // would be mispredicted about once per member) while two entries of room are left.
  int64_t c = 0;
  size_t q = 0;
  for (; q < words && c + 2 <= k; ++q) {
    uint64_t word = bits[q];
    bits[q] = 0;
    const int64_t base = static_cast<int64_t>(q) * 64, count = __builtin_popcountll(word);
    const uint64_t spare = uint64_t{1} << 63;  // ctz of an empty word: an entry past the count
    out[c] = base + __builtin_ctzll(word | spare);
    word &= word - 1;
    out[c + 1] = base + __builtin_ctzll(word | spare);
    for (int64_t t = 2; t < count; ++t) {
      word &= word - 1;
      out[c + t] = base + __builtin_ctzll(word);
    }
    c += count;
  }
  for (; q < words; ++q) {
    for (uint64_t word = bits[q]; word; word &= word - 1)
      out[c++] = static_cast<int64_t>(q) * 64 + __builtin_ctzll(word);
    bits[q] = 0;
  }
}

// The subset of the definition with the bitmap kept between calls (one object per caller).
class UniformSubset {
 public:
  // k of [0, n) from `key`, ascending into out[0, k). Throws std::invalid_argument unless
  // 0 <= k <= n < 2^32.
  void draw(uint64_t key, int64_t n, int64_t k, int64_t* out);

 private:
  std::vector<uint64_t> bits_;
};

// The same with a bitmap of its own (tests, one-off calls).
void uniform_subset(uint64_t key, int64_t n, int64_t k, int64_t* out);

}  // namespace cedar
