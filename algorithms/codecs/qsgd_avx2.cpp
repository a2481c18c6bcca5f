// The QSGD codec's AVX2 kernels (avx2_kernels.h): codes with their uniforms drawn in registers and
// packed straight into the stream, and values decoded straight from the stream; bit for bit what
// qsgd_encode.cpp and qsgd_decode.cpp compute.
// This file calls no inline function that other files compile for another instruction set.
#include "algorithms/codecs/avx2_kernels.h"

#if defined(__AVX2__) && defined(__AES__) && defined(__VAES__)
#define CEDAR_AVX2_KERNELS 1
#include <immintrin.h>

#include <cstring>

#include "algorithms/codecs/uniforms_avx2.h"
#endif

namespace cedar {

#if defined(CEDAR_AVX2_KERNELS)
namespace {

// Elements ahead of the codes being coded that are prefetched: the encoder's chunk (simd.h's
// kChunk, not included here: its inline functions are compiled for the baseline).
constexpr int64_t kPrefetch = 4096;

// The codes of 8-element groups of one bucket: levels and signs as qsgd_encode.cpp's quantize()
// computes them (the same operations in the same order; min(a, s) gives s for a NaN a).
class Quantizer {
 public:
  Quantizer(float scale, float s)
      : scale_(_mm256_set1_ps(scale)),
        s_(_mm256_set1_ps(s)),
        abs_mask_(_mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))) {}

  // The levels of x[0, 8) with uniforms u, and the mask of its negative elements.
  void operator()(const float* x, __m256 u, __m256i* level, __m256i* negative) const {
    const __m256 xv = _mm256_loadu_ps(x);
    const __m256 a = _mm256_min_ps(_mm256_mul_ps(_mm256_and_ps(xv, abs_mask_), scale_), s_);
    const __m256i whole = _mm256_cvttps_epi32(a);
    const __m256 up = _mm256_cmp_ps(u, _mm256_sub_ps(a, _mm256_cvtepi32_ps(whole)), _CMP_LT_OQ);
    *level = _mm256_sub_epi32(whole, _mm256_castps_si256(up));  // + 1 where u < frac
    *negative = _mm256_castps_si256(_mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_LT_OQ));
  }

 private:
  __m256 scale_, s_, abs_mask_;
};

// Four groups of eight B-bit codes (levels and negative masks of four groups) as the 8B bits of
// each group in 64-bit lane g, the stream's bit order. Codes are bytes (level | sign, the sign
// only where the level is not 0); for B <= 7, pmaddubsw joins neighbours (c0 + c1·2^B, 2B bits),
// pmaddwd neighbouring pairs (4B bits) and one 64-bit shift the two halves of each group.
template <int B>
__m256i pack_groups(const __m256i level[4], const __m256i negative[4]) {
  const __m256i l8 = avx2::pack_bytes(level), n8 = avx2::pack_bytes(negative);
  const __m256i signed_ = _mm256_andnot_si256(_mm256_cmpeq_epi8(l8, _mm256_setzero_si256()), n8);
  const __m256i codes = avx2::in_element_order(_mm256_or_si256(
      l8, _mm256_and_si256(signed_, _mm256_set1_epi8(static_cast<char>(1 << (B - 1))))));
  if constexpr (B == 8) {
    return codes;
  } else {
    const __m256i p2 =
        _mm256_maddubs_epi16(_mm256_set1_epi16(static_cast<int16_t>(1 | 1 << (8 + B))), codes);
    const __m256i p4 = _mm256_madd_epi16(p2, _mm256_set1_epi32(1 | 1 << (16 + 2 * B)));
    return _mm256_or_si256(_mm256_and_si256(p4, _mm256_set1_epi64x(0xffffffff)),
                           _mm256_slli_epi64(_mm256_srli_epi64(p4, 32), 4 * B));
  }
}

template <int B, bool kVaes>
int64_t quantize(const float* x, int64_t lo, int64_t count, float scale, float s,
                 const uint8_t* keys, uint8_t* out, const uint8_t* end) {
  const avx2::UniformBlocks<kVaes> blocks(keys);
  const Quantizer q(scale, s);
  // The 2B bytes of the two groups of each 128-bit lane to its bottom.
  alignas(32) int8_t compact[32];
  for (int i = 0; i < 32; ++i) {
    const int k = i % 16;
    compact[i] = static_cast<int8_t>(k < B ? k : k < 2 * B ? 8 + k - B : -128);
  }
  const __m256i vcompact = _mm256_load_si256(reinterpret_cast<const __m256i*>(compact));
  const uint64_t j = static_cast<uint64_t>(lo) / 4;  // the uniforms' block of element lo
  // The counters of the four pairs of blocks of a step: `base` (blocks j + g/4) plus 0, 2, 4, 6.
  __m256i base = blocks.counter(j);
  const __m256i step = _mm256_set_epi64x(0, 8, 0, 8);
  int64_t g = 0;
  // 32 codes (4B bytes) per step, stored as two 16-byte halves; the stores may run into the next
  // codes' bytes (written after them) but stay inside the stream.
  for (; g + 32 <= count && end - out >= 2 * B + 16; g += 32, out += 4 * B) {
    // The elements a chunk ahead on their way in while these are coded (the next chunk's norms
    // are the first pass over them).
    _mm_prefetch(reinterpret_cast<const char*>(x + g + kPrefetch), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(x + g + kPrefetch + 16), _MM_HINT_T0);
    __m256i ctr[4], w[4], level[4], negative[4];
    for (int p = 0; p < 4; ++p)
      ctr[p] = _mm256_add_epi64(base, _mm256_set_epi64x(0, 2 * p, 0, 2 * p));
    base = _mm256_add_epi64(base, step);
    blocks.template words<4>(ctr, w);
    for (int p = 0; p < 4; ++p) q(x + g + 8 * p, avx2::to_uniforms(w[p]), &level[p], &negative[p]);
    const __m256i packed = pack_groups<B>(level, negative);
    if constexpr (B == 8) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
    } else {
      const __m256i c = _mm256_shuffle_epi8(packed, vcompact);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(c));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * B), _mm256_extracti128_si256(c, 1));
    }
  }
  // Groups of eight, one 8-byte store each.
  for (; g + 8 <= count && end - out >= 8; g += 8, out += B) {
    const __m256i c = blocks.counter(j + static_cast<uint64_t>(g) / 4);
    __m256i w, level[4] = {}, negative[4] = {};
    blocks.template words<1>(&c, &w);
    q(x + g, avx2::to_uniforms(w), &level[0], &negative[0]);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out),
                     _mm256_castsi256_si128(pack_groups<B>(level, negative)));
  }
  return g;
}

template <bool kVaes>
int64_t quantize_bits(int B, const float* x, int64_t lo, int64_t count, float scale, float s,
                      const uint8_t* keys, uint8_t* out, const uint8_t* end) {
  switch (B) {
    case 2: return quantize<2, kVaes>(x, lo, count, scale, s, keys, out, end);
    case 3: return quantize<3, kVaes>(x, lo, count, scale, s, keys, out, end);
    case 4: return quantize<4, kVaes>(x, lo, count, scale, s, keys, out, end);
    case 5: return quantize<5, kVaes>(x, lo, count, scale, s, keys, out, end);
    case 6: return quantize<6, kVaes>(x, lo, count, scale, s, keys, out, end);
    case 7: return quantize<7, kVaes>(x, lo, count, scale, s, keys, out, end);
    case 8: return quantize<8, kVaes>(x, lo, count, scale, s, keys, out, end);
    default: return 0;
  }
}

// How the decoder stores its values: plainly, or non-temporal in 32- or 16-byte halves (the
// output's alignment).
enum class Store { kPlain, kStream32, kStream16 };

// Eight codes per step from one 8-byte load: lane k takes the four bytes from byte ⌊kB/8⌋ of the
// group (one pshufb of the load in both 128-bit halves), shifted right by kB mod 8; then level ·
// unit with the code's top bit as the sign bit, as qsgd_decode.cpp computes it.
template <int B, Store kStore>
int64_t dequantize(const uint8_t* in, const uint8_t* end, int64_t count, float unit, float* out) {
  alignas(32) int8_t window[32];
  alignas(32) int32_t shift[8];
  for (int k = 0; k < 8; ++k) {
    for (int i = 0; i < 4; ++i) window[16 * (k / 4) + 4 * (k % 4) + i] = (k * B) / 8 + i;
    shift[k] = (k * B) % 8;
  }
  const __m256i vwindow = _mm256_load_si256(reinterpret_cast<const __m256i*>(window));
  const __m256i vshift = _mm256_load_si256(reinterpret_cast<const __m256i*>(shift));
  const __m256i levels = _mm256_set1_epi32((1 << (B - 1)) - 1);
  const __m256i sign = _mm256_set1_epi32(static_cast<int32_t>(0x80000000u));
  const __m256 vunit = _mm256_set1_ps(unit);
  int64_t g = 0;
  for (; g + 8 <= count && end - in >= 8; g += 8, in += B) {
    int64_t w;
    std::memcpy(&w, in, 8);
    const __m256i v =
        _mm256_srlv_epi32(_mm256_shuffle_epi8(_mm256_set1_epi64x(w), vwindow), vshift);
    const __m256 mag = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v, levels)), vunit);
    const __m256 value = _mm256_xor_ps(
        mag, _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(v, 32 - B), sign)));
    if constexpr (kStore == Store::kStream32) {
      _mm256_stream_ps(out + g, value);
    } else if constexpr (kStore == Store::kStream16) {
      _mm_stream_ps(out + g, _mm256_castps256_ps128(value));
      _mm_stream_ps(out + g + 4, _mm256_extractf128_ps(value, 1));
    } else {
      _mm256_storeu_ps(out + g, value);
    }
  }
  return g;
}

template <Store kStore>
int64_t dequantize_bits(int B, const uint8_t* in, const uint8_t* end, int64_t count, float unit,
                        float* out) {
  switch (B) {
    case 2: return dequantize<2, kStore>(in, end, count, unit, out);
    case 3: return dequantize<3, kStore>(in, end, count, unit, out);
    case 4: return dequantize<4, kStore>(in, end, count, unit, out);
    case 5: return dequantize<5, kStore>(in, end, count, unit, out);
    case 6: return dequantize<6, kStore>(in, end, count, unit, out);
    case 7: return dequantize<7, kStore>(in, end, count, unit, out);
    case 8: return dequantize<8, kStore>(in, end, count, unit, out);
    default: return 0;
  }
}

}  // namespace

int64_t qsgd_quantize_avx2(int B, bool vaes, const float* x, int64_t lo, int64_t count, float scale,
                           float s, const uint8_t* keys, uint8_t* out, const uint8_t* end) {
  return vaes ? quantize_bits<true>(B, x, lo, count, scale, s, keys, out, end)
              : quantize_bits<false>(B, x, lo, count, scale, s, keys, out, end);
}

int64_t qsgd_dequantize_avx2(int B, const uint8_t* in, const uint8_t* end, int64_t count,
                             float unit, bool stream, float* out) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(out);
  if (stream && address % 32 == 0)
    return dequantize_bits<Store::kStream32>(B, in, end, count, unit, out);
  if (stream && address % 16 == 0)
    return dequantize_bits<Store::kStream16>(B, in, end, count, unit, out);
  return dequantize_bits<Store::kPlain>(B, in, end, count, unit, out);
}

#else  // no AVX2 kernels in this build: never called (best_isa() is kBaseline)

int64_t qsgd_quantize_avx2(int, bool, const float*, int64_t, int64_t, float, float, const uint8_t*,
                           uint8_t*, const uint8_t*) {
  return 0;
}
int64_t qsgd_dequantize_avx2(int, const uint8_t*, const uint8_t*, int64_t, float, bool, float*) {
  return 0;
}

#endif

}  // namespace cedar
