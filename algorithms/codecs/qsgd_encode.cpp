// The QSGD encoder (qsgd_codec.h): bucket norms, stochastic levels and packed codes, one chunk of
// kChunk elements at a time. Buckets that start on a byte go through the AVX2 kernels (uniforms
// drawn in registers) or the SSE2 ones straight into the stream; the scalar loops compute the
// same codes for every other layout and for what the kernels leave.
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "algorithms/codecs/avx2_kernels.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/qsgd_codec.h"
#include "algorithms/codecs/simd.h"

namespace cedar {
namespace {

class QsgdEncoder {
 public:
  QsgdEncoder(const QsgdFormat& f, Isa isa)
      : bits_(f.bits),
        levels_((1u << f.bits) - 1),
        bucket_(f.bucket),
        max_norm_(f.max_norm),
        isa_(isa) {}

  // Codes of B = bits + 1 bits: the bucket norms of x[0, n) into `norms`, the codes into `codes`.
  template <int B>
  void encode(const float* x, int64_t n, const CounterUniforms& rng, float* norms,
              uint8_t* codes) const {
    float u[kChunk];
    uint32_t code[kChunk];
    const float s = static_cast<float>(levels_);
    const uint32_t sign_bit = 1u << bits_;
    const uint8_t* end = codes + packed_bytes(n, B);
    int64_t normed = 0;  // buckets whose norm is known
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t len = std::min(kChunk, n - c0), c1 = c0 + len;
      const int64_t needed = (c1 - 1) / bucket_ + 1;
      if (needed > normed) bucket_norms(x, n, normed, needed, norms);
      normed = std::max(normed, needed);
      if constexpr (B <= 8) {
        if (isa_ != Isa::kBaseline && bucket_ % 8 == 0) {
          // The AVX2 kernel draws the uniforms itself; those of what it leaves (the last few
          // codes of the stream) come from `rng` here.
          for_each_bucket_span(c0, c1, n, norms, s, [&](int64_t lo, int64_t hi, float scale) {
            const int64_t done =
                qsgd_quantize_avx2(B, isa_ == Isa::kAvx2Vaes, x + lo, lo, hi - lo, scale, s,
                                   rng.round_keys(), codes + lo / 8 * B, end);
            if (done < hi - lo) {
              rng.fill(static_cast<uint64_t>(lo + done), hi - lo - done, u);
              quantize(x + lo + done, u, hi - lo - done, scale, s, sign_bit, code);
              pack<B>(code, hi - lo - done, codes + (lo + done) / 8 * B);
            }
          });
          continue;
        }
      }
      rng.fill(static_cast<uint64_t>(c0), len, u);
#if defined(__SSE2__)
      if constexpr (B <= 8) {
        if (bucket_ % 8 == 0) {
          // Every bucket starts on a byte: the codes go straight into the stream, group by
          // group; only the last few of the stream (its last 8 bytes at most) through `code`.
          for_each_bucket_span(c0, c1, n, norms, s, [&](int64_t lo, int64_t hi, float scale) {
            const int64_t done =
                encode_groups<B>(x + lo, u + (lo - c0), hi - lo, QuantizeLanes(scale, s, sign_bit),
                                 codes + lo / 8 * B, end);
            if (done < hi - lo) {
              quantize(x + lo + done, u + (lo - c0) + done, hi - lo - done, scale, s, sign_bit,
                       code);
              pack<B>(code, hi - lo - done, codes + (lo + done) / 8 * B);
            }
          });
          continue;
        }
      }
#endif
      for_each_bucket_span(c0, c1, n, norms, s, [&](int64_t lo, int64_t hi, float scale) {
        quantize(x + lo, u + (lo - c0), hi - lo, scale, s, sign_bit, code + (lo - c0));
      });
      pack<B>(code, len, codes + c0 / 8 * B);
    }
  }

 private:
  // f(lo, hi, scale) for each bucket's part [lo, hi) of the chunk [c0, c1) of x[0, n), in order:
  // scale = s / the bucket's norm (0 for a zero norm).
  template <class F>
  void for_each_bucket_span(int64_t c0, int64_t c1, int64_t n, const float* norms, float s,
                            F&& f) const {
    for (int64_t lo = c0; lo < c1;) {
      const int64_t b = lo / bucket_;
      const int64_t hi = std::min(c1, b * bucket_ + std::min(bucket_, n - b * bucket_));
      const float norm = norms[b];
      f(lo, hi, norm > 0 ? s / norm : 0.0f);
      lo = hi;
    }
  }

  // Norms of buckets [first, last): max-norms, or l2 norms rounded to fp32 (their sums in the
  // order of simd.h), a batch of buckets at a time.
  void bucket_norms(const float* x, int64_t n, int64_t first, int64_t last, float* norms) const {
    if (max_norm_) {
      for (int64_t b = first; b < last; ++b) {
        const int64_t lo = b * bucket_;
        norms[b] = max_abs(x + lo, std::min(bucket_, n - lo), isa_);
      }
      return;
    }
    constexpr int64_t kBatch = 64;
    double sums[kBatch];
    for (int64_t b = first; b < last; b += kBatch) {
      const int64_t e = std::min(last, b + kBatch);
      bucket_sums_of_squares(x, n, bucket_, b, e, sums, isa_);
      for (int64_t k = b; k < e; ++k) norms[k] = static_cast<float>(std::sqrt(sums[k - b]));
    }
  }

#if defined(__SSE2__)
  // The codes of four elements at one bucket's scale, as 32-bit lanes: the scalar loop of
  // quantize() with the same operations in the same order (min(a, s) returns s for a NaN a, as
  // the scalar comparison does).
  struct QuantizeLanes {
    QuantizeLanes(float scale, float s, uint32_t sign_bit)
        : vscale(_mm_set1_ps(scale)),
          vs(_mm_set1_ps(s)),
          vsign(_mm_set1_epi32(static_cast<int32_t>(sign_bit))) {}
    // The levels alone.
    __m128i level(const float* x, const float* u) const {
      const __m128 a = _mm_min_ps(_mm_mul_ps(_mm_and_ps(_mm_loadu_ps(x), abs_mask), vscale), vs);
      const __m128i whole = _mm_cvttps_epi32(a);
      const __m128 up = _mm_cmplt_ps(_mm_loadu_ps(u), _mm_sub_ps(a, _mm_cvtepi32_ps(whole)));
      return _mm_sub_epi32(whole, _mm_castps_si128(up));  // + 1 where u < frac
    }
    __m128i operator()(const float* x, const float* u) const {
      const __m128 xv = _mm_loadu_ps(x);
      const __m128i level = this->level(x, u);
      const __m128i negative =
          _mm_andnot_si128(_mm_cmpeq_epi32(level, _mm_setzero_si128()),
                           _mm_castps_si128(_mm_cmplt_ps(xv, _mm_setzero_ps())));
      return _mm_or_si128(level, _mm_and_si128(negative, vsign));
    }
    const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128 vscale, vs;
    __m128i vsign;
  };

  // Eight B-bit codes (B <= 8; 32-bit lanes, codes 0-3 and 4-7) as the low 8B bits of a 64-bit
  // lane: as 16-bit lanes, pmaddwd joins neighbours (c0 + c1·2^B in 32 bits), a 64-bit shift
  // joins those pairs (4B bits per 64-bit lane), and the two lanes give the 8B bits.
  template <int B>
  static __m128i pack_group(__m128i lo, __m128i hi) {
    const __m128i p2 = _mm_madd_epi16(_mm_packs_epi32(lo, hi), _mm_set1_epi32(1 | (1 << (B + 16))));
    const __m128i low2b = _mm_set1_epi64x((int64_t{1} << (2 * B)) - 1);
    const __m128i p4 = _mm_or_si128(_mm_and_si128(p2, low2b), _mm_srli_epi64(p2, 32 - 2 * B));
    return _mm_or_si128(p4, _mm_slli_epi64(_mm_srli_si128(p4, 8), 4 * B));
  }

  // The codes of the first groups of eight of x[0, n) (one bucket's elements, starting on a
  // byte) straight into `out`, as quantize and pack compute them: each group as one 8-byte
  // store, which may run into the next group's bytes (written after it) but stops before the
  // first group whose store would pass `end`. Returns the count done (a multiple of 8).
  template <int B>
  static int64_t encode_groups(const float* x, const float* u, int64_t n, const QuantizeLanes& q,
                               uint8_t* out, const uint8_t* end) {
    int64_t g = 0;
    if constexpr (B <= 7) {
      // Sixteen codes at a time as 16-bit lanes: the sign bit where x < 0 kept only where the
      // level is not 0 by a minimum with level << 8 (at least 256 > the sign bit, or 0); then
      // pmaddwd twice (pairs of 2B bits, which fit a signed 16-bit lane, then fours of 4B
      // bits) and one 64-bit shift give the two groups' 8B bits, one per 64-bit lane.
      const __m128i sign16 = _mm_set1_epi16(static_cast<int16_t>(1 << (B - 1)));
      const __m128i join2 = _mm_set1_epi32(1 | (1 << (B + 16)));
      const __m128i join4 = _mm_set1_epi32(1 | (1 << (2 * B + 16)));
      const __m128i low4b = _mm_set1_epi64x((int64_t{1} << (4 * B)) - 1);
      const __m128 zero = _mm_setzero_ps();
      auto codes8 = [&](int64_t k) {
        const __m128i level = _mm_packs_epi32(q.level(x + k, u + k), q.level(x + k + 4, u + k + 4));
        const __m128i negative =
            _mm_packs_epi32(_mm_castps_si128(_mm_cmplt_ps(_mm_loadu_ps(x + k), zero)),
                            _mm_castps_si128(_mm_cmplt_ps(_mm_loadu_ps(x + k + 4), zero)));
        return _mm_or_si128(
            level, _mm_min_epi16(_mm_and_si128(negative, sign16), _mm_slli_epi16(level, 8)));
      };
      for (; g + 16 <= n && end - out >= 8 + B; g += 16, out += 2 * B) {
        // A line of the elements a chunk ahead on its way in while these are coded (the next
        // chunk's norms are the first pass over it).
        _mm_prefetch(reinterpret_cast<const char*>(x + g + kChunk), _MM_HINT_T0);
        const __m128i p2 =
            _mm_packs_epi32(_mm_madd_epi16(codes8(g), join2), _mm_madd_epi16(codes8(g + 8), join2));
        const __m128i p4 = _mm_madd_epi16(p2, join4);
        const __m128i p8 =
            _mm_or_si128(_mm_and_si128(p4, low4b), _mm_slli_epi64(_mm_srli_epi64(p4, 32), 4 * B));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out), p8);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + B), _mm_srli_si128(p8, 8));
      }
    }
    for (; g + 8 <= n && end - out >= 8; g += 8, out += B)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out),
                       pack_group<B>(q(x + g, u + g), q(x + g + 4, u + g + 4)));
    return g;
  }
#endif

  // Codes (level | negative << bits) of x[0, n) at one bucket's scale; u: the uniforms.
  static void quantize(const float* x, const float* u, int64_t n, float scale, float s,
                       uint32_t sign_bit, uint32_t* code) {
    int64_t i = 0;
#if defined(__SSE2__)
    const QuantizeLanes q(scale, s, sign_bit);
    for (; i + 4 <= n; i += 4)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(code + i), q(x + i, u + i));
#endif
    for (; i < n; ++i) {
      float a = std::fabs(x[i]) * scale;
      a = a <= s ? a : s;  // rounding of the norm (and NaN) must not overflow the code
      const int32_t whole = static_cast<int32_t>(a);  // floor: 0 <= a <= s
      const uint32_t level =
          static_cast<uint32_t>(whole) + (u[i] < a - static_cast<float>(whole) ? 1u : 0u);
      code[i] = level | (((level != 0u) & (x[i] < 0)) ? sign_bit : 0u);
    }
  }

  // Eight B-bit codes fill B bytes: one 64-bit word (B <= 8) or two (B = 9), little-endian.
  template <int B>
  static void pack(const uint32_t* code, int64_t n, uint8_t* out) {
    int64_t g = 0;
#if defined(__SSE2__)
    if constexpr (B <= 8) {
      // The 8-byte store may run past the group's B bytes, never past the chunk's.
      const int64_t safe = n - (8 / B + 1) * 8;  // groups whose 8-byte store stays inside
      for (; g + 8 <= safe; g += 8, out += B)
        _mm_storel_epi64(
            reinterpret_cast<__m128i*>(out),
            pack_group<B>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(code + g)),
                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(code + g + 4))));
    }
#endif
    for (; g + 8 <= n; g += 8, out += B) {
      uint64_t lo = 0;
      for (int k = 0; k < 8 && k * B < 64; ++k) lo |= static_cast<uint64_t>(code[g + k]) << (k * B);
      if constexpr (B <= 8) {
        std::memcpy(out, &lo, B);
      } else {
        std::memcpy(out, &lo, 8);
        out[8] = static_cast<uint8_t>(code[g + 7] >> (64 - 7 * B));
      }
    }
    if (g < n) {
      BitWriter w(out, B);
      for (; g < n; ++g) w.put(code[g]);
      w.finish();
    }
  }

  int bits_;
  uint32_t levels_;
  int64_t bucket_;
  bool max_norm_;
  Isa isa_;
};

}  // namespace

void qsgd_encode(const QsgdFormat& f, const float* x, int64_t n, const CounterUniforms& rng,
                 float* norms, uint8_t* codes, Isa isa) {
  const QsgdEncoder e(f, isa);
  switch (f.bits + 1) {
    case 2: e.encode<2>(x, n, rng, norms, codes); break;
    case 3: e.encode<3>(x, n, rng, norms, codes); break;
    case 4: e.encode<4>(x, n, rng, norms, codes); break;
    case 5: e.encode<5>(x, n, rng, norms, codes); break;
    case 6: e.encode<6>(x, n, rng, norms, codes); break;
    case 7: e.encode<7>(x, n, rng, norms, codes); break;
    case 8: e.encode<8>(x, n, rng, norms, codes); break;
    default: e.encode<9>(x, n, rng, norms, codes); break;
  }
}

}  // namespace cedar
