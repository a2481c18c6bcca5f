#pragma once
// Packed sign bits (bit_packing.h's layout with b = 1) as AVX2 lane masks, for the sign decoders'
// AVX2 forms (bit_packing.cpp, sign_arithmetic.cpp). Those forms are functions marked
// CEDAR_SIGN_LANES_TARGET in files built for the baseline instruction set, called only where
// simd_impl::have_avx2() (simd.h); these helpers are inlined into them.
#include <cstdint>
#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CEDAR_SIGN_LANES 1
#define CEDAR_SIGN_LANES_TARGET __attribute__((target("avx2")))
#include <immintrin.h>

namespace cedar {
namespace sign_lanes {

// The 32 bits of elements [32w, 32w + 32) of a stream: its bytes 4w to 4w + 3, little-endian, so
// that bit i of the word is element 32w + i.
inline uint32_t word(const uint8_t* bits, int64_t w) {
  const uint8_t* b = bits + 4 * w;
  return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
         static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
}

// All ones in lane k where bit 8g + k of `word` (broadcast to every lane) is set: the mask of
// elements 8g to 8g + 7 of the word. g in [0, 4).
CEDAR_SIGN_LANES_TARGET __attribute__((always_inline)) inline __m256i mask(__m256i word, int g) {
  const __m256i bit = _mm256_slli_epi32(_mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128), 8 * g);
  return _mm256_cmpeq_epi32(_mm256_and_si256(word, bit), bit);
}

// `one` in the lanes of `m`, `zero` elsewhere: the eight decoded values, bit for bit.
CEDAR_SIGN_LANES_TARGET __attribute__((always_inline)) inline __m256 values(__m256i m, __m256 one,
                                                                            __m256 zero) {
  return _mm256_blendv_ps(zero, one, _mm256_castsi256_ps(m));
}

}  // namespace sign_lanes
}  // namespace cedar
#endif
