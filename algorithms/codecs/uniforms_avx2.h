#pragma once
// The counter-based uniforms of counter_rng.h, eight at a time in an AVX2 register, for the AVX2
// kernels (avx2_kernels.h). Included only by the translation units compiled for AVX2 with AES and
// VAES, all with the same flags, so that every copy of these inline functions is the same code.
#include <immintrin.h>

#include <cstdint>

namespace cedar {
namespace avx2 {

// The uniforms of blocks j and j + 1 (elements 4j .. 4j + 7), `Count` pairs of blocks at a time so
// that their rounds overlap. kVaes: both blocks of a pair per VAES instruction; otherwise each by
// AES-NI.
template <bool kVaes>
class UniformBlocks {
 public:
  explicit UniformBlocks(const uint8_t* keys) {
    for (int r = 0; r < kKeys; ++r)
      k_[r] =
          _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(keys) + r));
  }

  // The counters of blocks (j, j + 1): j in the low 64 bits of each block, zero above.
  static __m256i counter(uint64_t j) {
    return _mm256_set_epi64x(0, static_cast<int64_t>(j + 1), 0, static_cast<int64_t>(j));
  }

  // The 32-bit words of Count pairs of blocks, counters c[0, Count), into w[0, Count).
  template <int Count>
  void words(const __m256i* c, __m256i* w) const {
    if constexpr (kVaes) {
      for (int p = 0; p < Count; ++p) w[p] = _mm256_xor_si256(c[p], k_[0]);
      for (int r = 1; r < kKeys; ++r)
        for (int p = 0; p < Count; ++p) w[p] = _mm256_aesenc_epi128(w[p], k_[r]);
    } else {
      __m128i lo[Count], hi[Count];
      for (int p = 0; p < Count; ++p) {
        lo[p] = _mm_xor_si128(_mm256_castsi256_si128(c[p]), _mm256_castsi256_si128(k_[0]));
        hi[p] = _mm_xor_si128(_mm256_extracti128_si256(c[p], 1), _mm256_castsi256_si128(k_[0]));
      }
      for (int r = 1; r < kKeys; ++r) {
        const __m128i k = _mm256_castsi256_si128(k_[r]);
        for (int p = 0; p < Count; ++p) {
          lo[p] = _mm_aesenc_si128(lo[p], k);
          hi[p] = _mm_aesenc_si128(hi[p], k);
        }
      }
      for (int p = 0; p < Count; ++p) w[p] = _mm256_set_m128i(hi[p], lo[p]);
    }
  }

 private:
  static constexpr int kKeys = 5;  // k_0 .. k_4: CounterUniforms::kRounds = 4 rounds
  __m256i k_[kKeys];
};

// u = (word >> 8)·2^-24 per lane, as counter_rng.cpp converts the words.
inline __m256 to_uniforms(__m256i words) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(words, 8)),
                       _mm256_set1_ps(1.0f / 16777216.0f));
}

// Four vectors of eight 32-bit lanes (each a value that fits a signed byte, or a 0/-1 mask) as
// 32 bytes, in the order of the packs, which work within 128-bit lanes: dwords (4 bytes) v0[0..3],
// v1[0..3], v2[0..3], v3[0..3], v0[4..7], v1[4..7], v2[4..7], v3[4..7]. Lane-wise operations may
// follow; in_element_order() then puts the bytes in element order, v0's eight first.
inline __m256i pack_bytes(const __m256i v[4]) {
  return _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
}
inline __m256i in_element_order(__m256i packed) {
  return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace avx2
}  // namespace cedar
