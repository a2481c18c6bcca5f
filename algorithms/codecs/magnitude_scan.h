#pragma once
// What the magnitude selections share (DGC's sampled threshold, codecs/dgc_select.cpp, and the
// exact top-k, codecs/magnitude_topk.cpp): an integer key per element that orders the
// magnitudes, a strided sample of magnitudes, and one read pass over a tensor that reports the
// elements whose key exceeds a floor.
//
// Keys: the bits of |x| (the fp32 bits with the sign cleared) as an integer. For the magnitudes
// of non-NaN floats the key order is the numeric order (+0 and −0 share key 0); a NaN's key lies
// above +inf's, so a NaN ranks as the largest magnitude, as it does in torch::topk. Keys fit in
// 31 bits: signed and unsigned comparisons of keys agree.
#include <cstdint>
#include <cstring>

#include "algorithms/codecs/popcnt.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cedar {

inline int32_t magnitude_key(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7fffffff;
}

// out[j] = |p[j·stride]| for j < count. The samples lie far apart (a page or more for large
// tensors), so the loads of later samples are started early instead of waiting for each cache
// and TLB miss in turn.
void strided_magnitudes(const float* p, int64_t count, int64_t stride, float* out);

#if defined(__SSE2__)
// Bit t set where magnitude_key(p[t]) > f (every lane of f the floor), t < 32.
inline uint32_t above_mask(const float* p, __m128i f) {
  const __m128i magnitude = _mm_set1_epi32(0x7fffffff);
  __m128i above[8];
  for (int q = 0; q < 8; ++q) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4 * q));
    above[q] = _mm_cmpgt_epi32(_mm_and_si128(bits, magnitude), f);
  }
  // All-ones or zero lanes keep their value through the saturating packs: 32 lanes to 32 bytes.
  const __m128i lo =
      _mm_packs_epi16(_mm_packs_epi32(above[0], above[1]), _mm_packs_epi32(above[2], above[3]));
  const __m128i hi =
      _mm_packs_epi16(_mm_packs_epi32(above[4], above[5]), _mm_packs_epi32(above[6], above[7]));
  return static_cast<uint32_t>(_mm_movemask_epi8(lo)) | static_cast<uint32_t>(_mm_movemask_epi8(hi))
                                                            << 16;
}
#endif

// Calls hit(i), in ascending i, for every i in [begin, end) with magnitude_key(p[i]) > floor, the
// floor as it is when i is reached: hit may raise it, never lower it (floor −1 lets every element
// through). The pass compares 32 elements per step. Where few pass (below 1 in 128 in the last
// chunk of 4096 elements), a step without one costs one well-predicted branch; where more pass,
// branches on the data would be mispredicted about once per element passing, so the positions of
// a whole chunk are listed without them first (two written per step whatever the count) and then
// handed to hit(). Always inlined, so that a caller compiled for POPCNT counts each mask in one
// instruction (popcnt.h).
template <class Hit>
CEDAR_ALWAYS_INLINE void for_each_above(const float* p, int64_t begin, int64_t end,
                                        const int32_t& floor, Hit&& hit) {
  int64_t i = begin;
#if defined(__SSE2__)
  constexpr int64_t kChunk = 4096;
  auto sparse_steps = [&](int64_t from, int64_t to) {  // returns how many passed
    int64_t passed = 0;
    for (int64_t s = from; s + 32 <= to; s += 32) {
      uint32_t mask = above_mask(p + s, _mm_set1_epi32(floor));
      if (!mask) continue;
      passed += __builtin_popcount(mask);
      for (; mask; mask &= mask - 1) {  // hit() may have raised the floor: test again
        const int64_t j = s + __builtin_ctz(mask);
        if (magnitude_key(p[j]) > floor) hit(j);
      }
    }
    return passed;
  };
  bool dense = false;
  for (; i + kChunk <= end; i += kChunk) {
    if (!dense) {
      dense = sparse_steps(i, i + kChunk) * 128 > kChunk;
      continue;
    }
    const __m128i f = _mm_set1_epi32(floor);
    uint16_t at[kChunk + 32];
    int64_t count = 0;
    for (int64_t s = 0; s < kChunk; s += 32) {
      const uint32_t mask = above_mask(p + i + s, f);
      // Two spare bits, so that the two unconditional entries below never take ctz of zero.
      uint64_t m = mask | uint64_t{3} << 32;  // entries past the count are ignored
      at[count] = static_cast<uint16_t>(s + __builtin_ctzll(m));
      m &= m - 1;
      at[count + 1] = static_cast<uint16_t>(s + __builtin_ctzll(m));
      const int c = __builtin_popcount(mask);
      for (int t = 2; t < c; ++t) {
        m &= m - 1;
        at[count + t] = static_cast<uint16_t>(s + __builtin_ctzll(m));
      }
      count += c;
    }
    for (int64_t t = 0; t < count; ++t) {
      const int64_t j = i + at[t];
      if (magnitude_key(p[j]) > floor) hit(j);
    }
    dense = count * 128 > kChunk;
  }
  const int64_t steps_end = i + (end - i) / 32 * 32;
  sparse_steps(i, steps_end);
  i = steps_end;
#endif
  for (; i < end; ++i)
    if (magnitude_key(p[i]) > floor) hit(i);
}

}  // namespace cedar
