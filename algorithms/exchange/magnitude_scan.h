#pragma once
// What the magnitude selections share (DGC's sampled threshold, exchange/dgc_select.cpp, and the
// exact top-k, exchange/magnitude_topk.cpp): an integer key per element that orders the
// magnitudes, a strided sample of magnitudes, and one read pass over a tensor that reports the
// elements whose key exceeds a floor.
//
// Keys: the bits of |x| (the fp32 bits with the sign cleared) as an integer. For the magnitudes
// of non-NaN floats the key order is the numeric order (+0 and −0 share key 0); a NaN's key lies
// above +inf's, so a NaN ranks as the largest magnitude, as it does in torch::topk. Keys fit in
// 31 bits: signed and unsigned comparisons of keys agree.
#include <cstdint>
#include <cstring>

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

// Calls hit(i), in ascending i, for every i in [begin, end) with magnitude_key(p[i]) > floor, the
// floor as it is when i is reached: hit may raise it (floor −1 lets every element through). The
// pass tests 32 elements per step with one branch (almost every step has no hit) and works out
// the positions only in the steps that have one.
template <class Hit>
void for_each_above(const float* p, int64_t begin, int64_t end, const int32_t& floor, Hit&& hit) {
  int64_t i = begin;
#if defined(__SSE2__)
  const __m128i magnitude = _mm_set1_epi32(0x7fffffff);
  for (; i + 32 <= end; i += 32) {
    const __m128i f = _mm_set1_epi32(floor);
    __m128i above[8];
    for (int q = 0; q < 8; ++q) {
      const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 4 * q));
      above[q] = _mm_cmpgt_epi32(_mm_and_si128(bits, magnitude), f);
    }
    __m128i any = above[0];
    for (int q = 1; q < 8; ++q) any = _mm_or_si128(any, above[q]);
    if (!_mm_movemask_epi8(any)) continue;
    uint32_t mask = 0;
    for (int q = 0; q < 8; ++q)
      mask |= static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(above[q]))) << (4 * q);
    // hit() may have raised the floor since the step's comparisons: test each position again.
    for (; mask; mask &= mask - 1) {
      const int64_t j = i + __builtin_ctz(mask);
      if (magnitude_key(p[j]) > floor) hit(j);
    }
  }
#endif
  for (; i < end; ++i)
    if (magnitude_key(p[i]) > floor) hit(i);
}

}  // namespace cedar
