// TernGrad's AVX2 kernel (avx2_kernels.h): the 2-bit codes of 32 elements per step with their
// uniforms drawn in registers; bit for bit what terngrad_codec.cpp's ternarize() computes.
// This file calls no inline function that other files compile for another instruction set.
#include "algorithms/codecs/avx2_kernels.h"

#if defined(__AVX2__) && defined(__AES__) && defined(__VAES__)
#define CEDAR_AVX2_KERNELS 1
#include <immintrin.h>

#include "algorithms/codecs/uniforms_avx2.h"
#endif

namespace cedar {

#if defined(CEDAR_AVX2_KERNELS)
namespace {

// Codes as 32-bit lanes, kept & (1 - negative): 0, 1 (+s) or 2 (−s), from the comparisons of
// terngrad_codec.cpp: kept where u·s < min(t, |x|) (min(t, |x|) is |x| when either is NaN, as
// std::min(|x|, t)). Then bytes in element order, pmaddubsw (c0 + 4·c1) and pmaddwd (+ 16·(c2 +
// 4·c3)) give one byte per four codes in the low byte of each 32-bit lane.
template <bool kVaes>
int64_t ternarize(const float* x, int64_t n, float s, float t, const uint8_t* keys, uint8_t* out) {
  const avx2::UniformBlocks<kVaes> blocks(keys);
  const __m256 vs = _mm256_set1_ps(s), vt = _mm256_set1_ps(t), zero = _mm256_setzero_ps();
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i join2 = _mm256_set1_epi16(1 | 4 << 8), join4 = _mm256_set1_epi32(1 | 16 << 16);
  // The low byte of each 32-bit lane to the bottom of its 128-bit half.
  const __m256i low_bytes =
      _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  __m256i ctr[4];
  for (int p = 0; p < 4; ++p) ctr[p] = blocks.counter(2 * p);
  const __m256i step = _mm256_set_epi64x(0, 8, 0, 8);
  int64_t g = 0;
  for (; g + 32 <= n; g += 32, out += 8) {
    __m256i w[4], code[4];
    blocks.template words<4>(ctr, w);
    for (int p = 0; p < 4; ++p) {
      ctr[p] = _mm256_add_epi64(ctr[p], step);
      const __m256 xv = _mm256_loadu_ps(x + g + 8 * p);
      const __m256 a = _mm256_min_ps(vt, _mm256_and_ps(xv, abs_mask));
      const __m256 kept = _mm256_cmp_ps(_mm256_mul_ps(avx2::to_uniforms(w[p]), vs), a, _CMP_LT_OQ);
      const __m256 negative = _mm256_cmp_ps(xv, zero, _CMP_LT_OQ);
      code[p] = _mm256_and_si256(_mm256_castps_si256(kept),
                                 _mm256_sub_epi32(one, _mm256_castps_si256(negative)));
    }
    const __m256i bytes = avx2::in_element_order(avx2::pack_bytes(code));
    const __m256i quads = _mm256_madd_epi16(_mm256_maddubs_epi16(bytes, join2), join4);
    const __m256i b = _mm256_shuffle_epi8(quads, low_bytes);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out),
                     _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
  }
  return g;
}

}  // namespace

int64_t ternarize_avx2(bool vaes, const float* x, int64_t n, float s, float t, const uint8_t* keys,
                       uint8_t* out) {
  return vaes ? ternarize<true>(x, n, s, t, keys, out) : ternarize<false>(x, n, s, t, keys, out);
}

#else  // no AVX2 kernels in this build: never called (best_isa() is kBaseline)

int64_t ternarize_avx2(bool, const float*, int64_t, float, float, const uint8_t*, uint8_t*) {
  return 0;
}

#endif

}  // namespace cedar
