#include "algorithms/codecs/terngrad_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "algorithms/codecs/avx2_kernels.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/simd.h"

namespace cedar {

TernaryStats ternary_stats(const float* x, int64_t n, double c, Isa isa) {
  TernaryStats st;
  if (!(c > 0 && n > 0)) {
    st.max_abs = max_abs(x, n, isa);
    return st;
  }
  const ShiftedSums s = shifted_sums(x, n, x[0], isa);
  st.max_abs = s.max_abs;
  const double nn = static_cast<double>(n);
  const double var = std::max(0.0, (s.sum_sq - s.sum * s.sum / nn) / nn);
  st.clip = static_cast<float>(c * std::sqrt(var));
  return st;
}

void ternarize(const float* x, int64_t n, float s, float t, at::Generator& gen, uint8_t* out,
               Isa isa) {
  const CounterUniforms rng(draw_key(gen));
  // The AVX2 kernel draws its uniforms in registers and leaves the last few codes (fewer than 32)
  // to the loops below.
  const int64_t start = isa == Isa::kBaseline ? 0
                                              : ternarize_avx2(isa == Isa::kAvx2Vaes, x, n, s, t,
                                                               rng.round_keys(), out);
  float u[kChunk];
  uint8_t code[kChunk];
  for (int64_t c0 = start; c0 < n; c0 += kChunk) {
    const int64_t len = std::min(kChunk, n - c0);
    rng.fill(static_cast<uint64_t>(c0), len, u);
    const float* xc = x + c0;
    uint8_t* o = out + c0 / 4;  // c0 is a multiple of 4 (`start` is one of 32)
    int64_t done = 0;           // elements whose codes are in `o` already
#if defined(__SSE2__)
    // The scalar loops below sixteen codes (four bytes) at a time, the same comparisons:
    // min(t, |x|) is t < |x| ? t : |x|, as std::min(|x|, t). Codes as 32-bit lanes
    // (kept & (1 - negative): 0, 1 or 2), joined by pmaddwd: neighbours c0 + 4·c1 (4 bits), then
    // neighbouring pairs (8 bits: one byte), then the four bytes gathered by two packs.
    const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    const __m128 vs = _mm_set1_ps(s), vt = _mm_set1_ps(t), zero = _mm_setzero_ps();
    const __m128i one = _mm_set1_epi32(1);
    const __m128i join2 = _mm_set1_epi32(1 | 4 << 16), join4 = _mm_set1_epi32(1 | 16 << 16);
    auto codes4 = [&](int64_t k) {
      const __m128 xv = _mm_loadu_ps(xc + k);
      const __m128 a = _mm_min_ps(vt, _mm_and_ps(xv, abs_mask));
      const __m128i kept = _mm_castps_si128(_mm_cmplt_ps(_mm_mul_ps(_mm_loadu_ps(u + k), vs), a));
      const __m128i negative = _mm_castps_si128(_mm_cmplt_ps(xv, zero));
      return _mm_and_si128(kept, _mm_sub_epi32(one, negative));
    };
    for (; done + 16 <= len; done += 16) {
      // A line of the elements a chunk ahead on its way in while these are coded.
      _mm_prefetch(reinterpret_cast<const char*>(xc + done + kChunk), _MM_HINT_T0);
      const __m128i p0 = _mm_madd_epi16(_mm_packs_epi32(codes4(done), codes4(done + 4)), join2);
      const __m128i p1 =
          _mm_madd_epi16(_mm_packs_epi32(codes4(done + 8), codes4(done + 12)), join2);
      const __m128i bytes = _mm_madd_epi16(_mm_packs_epi32(p0, p1), join4);
      const __m128i b16 = _mm_packs_epi32(bytes, bytes);
      const int32_t word = _mm_cvtsi128_si32(_mm_packus_epi16(b16, b16));
      std::memcpy(o + done / 4, &word, 4);
    }
#endif
    for (int64_t k = done; k < len; ++k) {
      const float a = std::min(std::fabs(xc[k]), t);
      code[k] = u[k] * s < a ? (xc[k] < 0 ? 2 : 1) : 0;
    }
    const int64_t full = len / 4;
    for (int64_t j = done / 4; j < full; ++j)
      o[j] = static_cast<uint8_t>(code[4 * j] | code[4 * j + 1] << 2 | code[4 * j + 2] << 4 |
                                  code[4 * j + 3] << 6);
    if (full * 4 < len) {
      uint8_t last = 0;
      for (int64_t k = full * 4; k < len; ++k)
        last |= static_cast<uint8_t>(code[k] << (2 * (k - full * 4)));
      o[full] = last;
    }
  }
}

// A table of the four values of every byte turns each byte into one 16-byte copy or addition.
void add_ternary(const uint8_t* in, int64_t n, const float value[4], bool first, float* sum) {
  float v[4];
  for (int c = 0; c < 4; ++c) v[c] = first ? 0.0f + value[c] : value[c];
  const int64_t full = n / 4;
  if (full >= 256) {
    alignas(16) float quad[256][4];
    for (int b = 0; b < 256; ++b)
      for (int q = 0; q < 4; ++q) quad[b][q] = v[(b >> (2 * q)) & 3];
    if (first) {
      int64_t j = 0;
      // Non-temporal stores (simd.h) from the first aligned group on.
      if (kStreamingStores && stream_output(n)) {
        for (; j < full && (reinterpret_cast<uintptr_t>(sum + 4 * j) & 15); ++j)
          std::memcpy(sum + 4 * j, quad[in[j]], 16);
        for (; j < full; ++j) stream4(sum + 4 * j, quad[in[j]]);
        store_fence();
      }
      for (; j < full; ++j) std::memcpy(sum + 4 * j, quad[in[j]], 16);
    } else {
      for (int64_t j = 0; j < full; ++j)
        for (int q = 0; q < 4; ++q) sum[4 * j + q] += quad[in[j]][q];
    }
  } else {
    for (int64_t j = 0; j < full; ++j)
      for (int q = 0; q < 4; ++q) {
        const float e = v[(in[j] >> (2 * q)) & 3];
        sum[4 * j + q] = first ? e : sum[4 * j + q] + e;
      }
  }
  for (int64_t k = full * 4; k < n; ++k) {
    const float e = v[(in[full] >> (2 * (k - full * 4))) & 3];
    sum[k] = first ? e : sum[k] + e;
  }
}

}  // namespace cedar
