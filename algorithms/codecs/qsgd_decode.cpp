// The QSGD decoder (qsgd_codec.h): ±level·‖v‖/s for every code. Where buckets start on a byte,
// the AVX2 kernel decodes up to 8-bit codes straight from the stream into the output, bucket by
// bucket. Otherwise one chunk of kChunk elements at a time: up to 5-bit codes go two at a time
// through a table of signed levels (SSE2 straight from the stream where buckets start on a byte);
// wider codes through a buffer of unpacked codes.
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

class QsgdDecoder {
 public:
  QsgdDecoder(const QsgdFormat& f, Isa isa) : bucket_(f.bucket), isa_(isa) {}

  // Values into out[0, n): chunk by chunk through an L1 buffer, streamed out when large.
  template <int B>
  void decode(const uint8_t* codes, int64_t n, const float* norms, float* out) const {
    if constexpr (B <= 8) {
      if (isa_ != Isa::kBaseline && bucket_ % 8 == 0) return decode_avx2<B>(codes, n, norms, out);
    }
    if constexpr (B <= 5) {
      static const PairLevels<B> table;
      float level[kChunk];
      const uint8_t* end = codes + packed_bytes(n, B);
      const bool stream = stream_output(n);
      constexpr uint32_t levels = (1u << (B - 1)) - 1;
      for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
        const int64_t len = std::min(kChunk, n - c0), c1 = c0 + len;
#if defined(__SSE2__)
        if (bucket_ % 8 == 0) {
          // Every bucket starts on a byte: no level buffer between the look-ups and the scaling,
          // and streamed output goes straight out where it is aligned (every group then is).
          const bool direct = !stream || (reinterpret_cast<uintptr_t>(out) & 15) == 0;
          float* dst = direct ? out + c0 : level;
          for (int64_t lo = c0; lo < c1;) {
            const int64_t b = lo / bucket_;
            const int64_t hi = std::min(c1, b * bucket_ + std::min(bucket_, n - b * bucket_));
            const float unit = norms[b] / static_cast<float>(levels);
            const uint8_t* in = codes + lo / 8 * B;
            float* to = dst + (lo - c0);
            const bool finite = std::isfinite(unit);
            int64_t done =
                stream && direct
                    ? (finite ? decode_groups<B, true, true>(in, end, hi - lo, table, unit, to)
                              : decode_groups<B, true, false>(in, end, hi - lo, table, unit, to))
                    : (finite ? decode_groups<B, false, true>(in, end, hi - lo, table, unit, to)
                              : decode_groups<B, false, false>(in, end, hi - lo, table, unit, to));
            // The last few codes of the stream (its last 8 bytes at most), by the general path.
            float rest[64];
            while (done < hi - lo) {
              const int64_t k = std::min<int64_t>(64, hi - lo - done);
              unpack_levels<B>(codes + (lo + done) / 8 * B, end, k, table, rest);
              scale_levels(rest, k, unit, dst + (lo - c0) + done);
              done += k;
            }
            lo = hi;
          }
          if (!direct) store_floats(out + c0, level, len, true);
          continue;
        }
#endif
        unpack_levels<B>(codes + c0 / 8 * B, end, len, table, level);
        for (int64_t lo = c0; lo < c1;) {
          const int64_t b = lo / bucket_;
          const int64_t hi = std::min(c1, b * bucket_ + std::min(bucket_, n - b * bucket_));
          // In place when streaming (the chunk then goes out through non-temporal stores).
          scale_levels(level + (lo - c0), hi - lo, norms[b] / static_cast<float>(levels),
                       (stream ? level : out + c0) + (lo - c0));
          lo = hi;
        }
        if (stream) store_floats(out + c0, level, len, true);
      }
      if (stream) store_fence();
      return;
    }
    // B > 5: a table of pairs would no longer fit in L1; the codes go through a buffer.
    uint32_t code[kChunk];
    float value[kChunk];
    const uint8_t* end = codes + packed_bytes(n, B);
    const bool stream = stream_output(n);
    constexpr int bits = B - 1;  // B = bits + 1: constants the loop below vectorizes with
    constexpr uint32_t levels = (1u << bits) - 1;
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t len = std::min(kChunk, n - c0), c1 = c0 + len;
      unpack<B>(codes + c0 / 8 * B, end, len, code);
      for (int64_t lo = c0; lo < c1;) {
        const int64_t b = lo / bucket_;
        const int64_t hi = std::min(c1, b * bucket_ + std::min(bucket_, n - b * bucket_));
        const float unit = norms[b] / static_cast<float>(levels);
        const uint32_t* c = code + (lo - c0);
        float* v = (stream ? value : out + c0) + (lo - c0);
        for (int64_t i = 0; i < hi - lo; ++i) {
          // level · unit with the sign bit of the code moved to the float's sign bit.
          const float mag = static_cast<float>(static_cast<int32_t>(c[i] & levels)) * unit;
          uint32_t word;
          std::memcpy(&word, &mag, 4);
          word ^= (c[i] >> bits) << 31;
          std::memcpy(v + i, &word, 4);
        }
        lo = hi;
      }
      if (stream) store_floats(out + c0, value, len, true);
    }
    if (stream) store_fence();
  }

 private:
  // Bucket by bucket straight into `out` by the AVX2 kernel; the last few codes of the stream (its
  // last 8 bytes at most) and a ragged end one by one.
  template <int B>
  void decode_avx2(const uint8_t* codes, int64_t n, const float* norms, float* out) const {
    constexpr uint32_t levels = (1u << (B - 1)) - 1;
    const uint8_t* end = codes + packed_bytes(n, B);
    const bool stream = kStreamingStores && stream_output(n);
    for (int64_t lo = 0; lo < n;) {
      const int64_t len = std::min(bucket_, n - lo);
      const float unit = norms[lo / bucket_] / static_cast<float>(levels);
      const uint8_t* in = codes + lo / 8 * B;
      const int64_t done = qsgd_dequantize_avx2(B, in, end, len, unit, stream, out + lo);
      if (done < len) {
        BitReader r(in + done / 8 * B, B);
        for (int64_t i = lo + done; i < lo + len; ++i) {
          const uint32_t c = r.get();
          const float mag = static_cast<float>(static_cast<int32_t>(c & levels)) * unit;
          uint32_t word;
          std::memcpy(&word, &mag, 4);
          word ^= (c >> (B - 1)) << 31;
          std::memcpy(out + i, &word, 4);
        }
      }
      lo += len;
    }
    if (stream) store_fence();
  }

  // The first 8 bytes of a group of eight B-bit codes at `in`, little-endian: one 8-byte load
  // (bits above 8·B are not used), or near `end`, the end of the packed stream, its B bytes one
  // by one so that no load reads past it.
  template <int B>
  static uint64_t load_group(const uint8_t* in, const uint8_t* end) {
    uint64_t w = 0;
    if (end - in >= 8) {
      std::memcpy(&w, in, 8);
    } else {
      for (int k = 0; k < B && k < 8; ++k) w |= static_cast<uint64_t>(in[k]) << (8 * k);
    }
    return w;
  }

  // `end`: the end of the packed stream (8-byte loads never read past it).
  template <int B>
  static void unpack(const uint8_t* in, const uint8_t* end, int64_t n, uint32_t* code) {
    constexpr uint32_t mask = (1u << B) - 1;
    int64_t g = 0;
    for (; g + 8 <= n; g += 8, in += B) {
      const uint64_t lo = load_group<B>(in, end);
      for (int k = 0; k < 8 && k * B < 64; ++k)
        code[g + k] = static_cast<uint32_t>(lo >> (k * B)) & mask;
      if constexpr (B > 8)
        code[g + 7] = (code[g + 7] | static_cast<uint32_t>(in[8]) << (64 - 7 * B)) & mask;
    }
    if (g < n) {
      BitReader r(in, B);
      for (; g < n; ++g) code[g] = r.get();
    }
  }

  // The two codes of every 2B-bit pair (c0 | c1 << B) as signed levels: ±level in fp32 with the
  // code's sign bit (a zero level with the sign bit set is -0). 8 KiB for B = 5.
  template <int B>
  struct PairLevels {
    alignas(16) float v[1 << (2 * B)][2];
    PairLevels() {
      constexpr uint32_t levels = (1u << (B - 1)) - 1;
      for (uint32_t p = 0; p < (1u << (2 * B)); ++p)
        for (int k = 0; k < 2; ++k) {
          const uint32_t c = (p >> (k * B)) & ((1u << B) - 1);
          const float l = static_cast<float>(c & levels);
          v[p][k] = (c >> (B - 1)) ? -l : l;
        }
    }
  };

  // out[i] = |t_i|·unit with the sign bit of t_i (t: signed levels): level · unit with the sign
  // bit flipped for a negative code, bit for bit (also for a NaN or infinite norm).
  static void scale_levels(const float* t, int64_t n, float unit, float* out) {
    int64_t i = 0;
#if defined(__SSE2__)
    const __m128 sign = _mm_castsi128_ps(_mm_set1_epi32(static_cast<int32_t>(0x80000000u)));
    const __m128 vu = _mm_set1_ps(unit);
    for (; i + 4 <= n; i += 4) {
      const __m128 tv = _mm_loadu_ps(t + i);
      _mm_storeu_ps(out + i,
                    _mm_xor_ps(_mm_mul_ps(_mm_andnot_ps(sign, tv), vu), _mm_and_ps(sign, tv)));
    }
#endif
    for (; i < n; ++i) {
      const float mag = std::fabs(t[i]) * unit;
      uint32_t word, tw;
      std::memcpy(&word, &mag, 4);
      std::memcpy(&tw, t + i, 4);
      word ^= tw & 0x80000000u;
      std::memcpy(out + i, &word, 4);
    }
  }

  // Signed levels of n codes at `in` into t[0, n), two codes per table look-up; `end`: the end of
  // the packed stream (8-byte loads never read past it).
  template <int B>
  static void unpack_levels(const uint8_t* in, const uint8_t* end, int64_t n,
                            const PairLevels<B>& table, float* t) {
    constexpr uint64_t pair = (uint64_t{1} << (2 * B)) - 1;
    int64_t g = 0;
    for (; g + 8 <= n; g += 8, in += B) {
      const uint64_t w = load_group<B>(in, end);
      for (int k = 0; k < 4; ++k) std::memcpy(t + g + 2 * k, table.v[(w >> (2 * B * k)) & pair], 8);
    }
    if (g < n) {
      BitReader r(in, B);
      for (; g < n; ++g) t[g] = table.v[r.get()][0];
    }
  }

#if defined(__SSE2__)
  // The values of the first codes of one bucket (n of them, starting on a byte) straight from the
  // stream, eight per B-byte group, as unpack_levels and scale_levels compute them; stops before
  // the first group whose 8-byte load would pass `end`. Returns the count done (a multiple of 8).
  // Streamed: non-temporal stores (out 16-byte aligned). FiniteUnit: `unit` is finite, so that
  // (±level)·unit is level·unit with the sign flipped as it stands (the sign of a product of
  // non-NaN factors is the xor of theirs; 0·∞ is the one NaN), one multiplication per value.
  template <int B, bool Streamed, bool FiniteUnit>
  static int64_t decode_groups(const uint8_t* in, const uint8_t* end, int64_t n,
                               const PairLevels<B>& table, float unit, float* out) {
    constexpr uint64_t pair = (uint64_t{1} << (2 * B)) - 1;
    const __m128 sign = _mm_castsi128_ps(_mm_set1_epi32(static_cast<int32_t>(0x80000000u)));
    const __m128 vu = _mm_set1_ps(unit);
    auto look_up = [&](uint64_t w, int k) {  // pairs k and k + 1 of the word as four levels
      const __m128 lo = _mm_castpd_ps(
          _mm_load_sd(reinterpret_cast<const double*>(table.v[(w >> (2 * B * k)) & pair])));
      return _mm_loadh_pi(lo,
                          reinterpret_cast<const __m64*>(table.v[(w >> (2 * B * (k + 1))) & pair]));
    };
    auto scale = [&](__m128 t) {
      if constexpr (FiniteUnit) return _mm_mul_ps(t, vu);
      return _mm_xor_ps(_mm_mul_ps(_mm_andnot_ps(sign, t), vu), _mm_and_ps(sign, t));
    };
    int64_t g = 0;
    for (; g + 8 <= n && end - in >= 8; g += 8, in += B) {
      uint64_t w;
      std::memcpy(&w, in, 8);
      if constexpr (Streamed) {
        _mm_stream_ps(out + g, scale(look_up(w, 0)));
        _mm_stream_ps(out + g + 4, scale(look_up(w, 2)));
      } else {
        _mm_storeu_ps(out + g, scale(look_up(w, 0)));
        _mm_storeu_ps(out + g + 4, scale(look_up(w, 2)));
      }
    }
    return g;
  }
#endif

  int64_t bucket_;
  Isa isa_;
};

}  // namespace

void qsgd_decode(const QsgdFormat& f, const uint8_t* codes, int64_t n, const float* norms,
                 float* out, Isa isa) {
  const QsgdDecoder d(f, isa);
  switch (f.bits + 1) {
    case 2: d.decode<2>(codes, n, norms, out); break;
    case 3: d.decode<3>(codes, n, norms, out); break;
    case 4: d.decode<4>(codes, n, norms, out); break;
    case 5: d.decode<5>(codes, n, norms, out); break;
    case 6: d.decode<6>(codes, n, norms, out); break;
    case 7: d.decode<7>(codes, n, norms, out); break;
    case 8: d.decode<8>(codes, n, norms, out); break;
    default: d.decode<9>(codes, n, norms, out); break;
  }
}

}  // namespace cedar
