// QSGD — Alistarh, Grubic, Li, Tomioka, Vojnovic, "QSGD: Communication-Efficient SGD via Gradient
// Quantization and Encoding", NeurIPS 2017.
//
// Rule (per bucket v of `bucket_size` consecutive elements of one gradient tensor, s levels):
//   Q_s(v)_i = ‖v‖ · sgn(v_i) · ξ_i,  l = ⌊s·|v_i|/‖v‖⌋,
//   ξ_i = (l+1)/s with probability s·|v_i|/‖v‖ − l, else l/s.
// Unbiased, E[Q_s(v)] = v, with E‖Q_s(v) − v‖² ≤ min(n/s², √n/s)·‖v‖² (n = bucket size, L2 norm).
// Exchange: every rank encodes each gradient of the bucket, one allgather carries all encodings
// (quantized values cannot be summed in place without overflow), every rank decodes every rank's
// encoding and averages; the optimizer then applies its usual momentum SGD step.
//
// Hyper-parameters:
//   bits        (default 4)   s = 2^bits − 1 levels; an element costs bits + 1 bits (level + sign).
//                             4 and 8 bits are the settings the paper reports at full accuracy; 4
//                             is the default as the one of the two that compresses most (5 bits
//                             per element + 4 bytes per 512, 6.3x less than fp32; 8 bits: 3.5x).
//   bucket_size (default 512) elements that share one norm (one fp32 on the wire).
//   norm        (default l2)  l2: the paper's analysis (variance bound above); max: ‖v‖∞, still
//                             unbiased, with finer effective levels.
//
// Encoding of one tensor of n elements, B = bucket_size, m = ⌈n/B⌉ buckets:
//   bytes [0, 4m)   m fp32 norms (host byte order, little-endian on every supported platform);
//   then            n codes of bits+1 bits packed by bit_packing.h (LSB-first stream),
//                   code = level | (negative << bits), level in [0, s]; negative is set only when
//                   level > 0 (a zero has no sign).
//   size = 4·⌈n/B⌉ + ⌈n·(bits+1)/8⌉ bytes.
// Norms: max by |v_i|; l2 as the square root of Σ v_i² in fp64, accumulated in eight partial
// sums (element i of the bucket into sum i mod 8), added as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)),
// then rounded to fp32 (codecs/simd.h).
// Randomness: per bucket of the trainer, make_generator(seed, rank, step, stream = bucket.index);
// per tensor, in bucket order, key = draw_key(gen) and u_i = CounterUniforms(key) at element i
// (counter_rng.h), level = l + (u_i < a_i − l) with a_i = |v_i|·(s/‖v‖) in fp32 — reproducible
// from (config, seed, world size).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "algorithms/catalog.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/algorithm.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/simd.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct QsgdParams {
  int bits = 4;
  int64_t bucket_size = 512;
  std::string norm = "l2";

  template <class V>
  void visit(V& v) {
    v("bits", bits,
      "bits per quantization level: s = 2^bits - 1 levels; each element costs bits + 1 bits "
      "(level and sign)",
      in_range(1, 8));
    v("bucket_size", bucket_size, "consecutive elements of a gradient that share one norm",
      at_least(1));
    v("norm", norm, "bucket norm the levels are relative to: l2 (the paper's analysis) or max",
      one_of({"l2", "max"}));
  }
};

class QsgdCompressor final : public Compressor {
 public:
  QsgdCompressor(int bits, int64_t bucket, bool max_norm)
      : bits_(bits), levels_((1u << bits) - 1), bucket_(bucket), max_norm_(max_norm) {}

  int64_t payload_bytes(int64_t numel) const override {
    return 4 * buckets(numel) + packed_bytes(numel, bits_ + 1);
  }

  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override {
    at::Tensor v = x.detach().to(at::kCPU, at::kFloat).contiguous().reshape({-1});
    const int64_t n = v.numel();
    const int64_t m = buckets(n);
    at::Tensor out = at::empty({payload_bytes(n)}, at::kByte);
    uint8_t* op = out.data_ptr<uint8_t>();
    std::vector<float> norms(static_cast<size_t>(m));
    const CounterUniforms rng(draw_key(gen));
    const float* vp = v.data_ptr<float>();
    uint8_t* codes = op + 4 * m;
    switch (bits_ + 1) {
      case 2: encode<2>(vp, n, rng, norms.data(), codes); break;
      case 3: encode<3>(vp, n, rng, norms.data(), codes); break;
      case 4: encode<4>(vp, n, rng, norms.data(), codes); break;
      case 5: encode<5>(vp, n, rng, norms.data(), codes); break;
      case 6: encode<6>(vp, n, rng, norms.data(), codes); break;
      case 7: encode<7>(vp, n, rng, norms.data(), codes); break;
      case 8: encode<8>(vp, n, rng, norms.data(), codes); break;
      default: encode<9>(vp, n, rng, norms.data(), codes); break;
    }
    if (m) std::memcpy(op, norms.data(), 4 * static_cast<size_t>(m));
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    at::Tensor out = at::empty({numel}, at::kFloat);
    decompress_into(payload, out);
    return out;
  }

  void decompress_into(const at::Tensor& payload, at::Tensor& out) override {
    check_decode_target(out, "qsgd");
    const int64_t numel = out.numel();
    if (payload.numel() != payload_bytes(numel))
      throw std::invalid_argument("qsgd: a payload of " + std::to_string(payload.numel()) +
                                  " bytes for " + std::to_string(numel) + " elements (expected " +
                                  std::to_string(payload_bytes(numel)) + ")");
    const int64_t m = buckets(numel);
    at::Tensor in = payload.contiguous();
    const uint8_t* ip = in.data_ptr<uint8_t>();
    std::vector<float> norms(static_cast<size_t>(m));
    if (m) std::memcpy(norms.data(), ip, 4 * static_cast<size_t>(m));
    float* o = out.data_ptr<float>();
    switch (bits_ + 1) {
      case 2: decode<2>(ip + 4 * m, numel, norms.data(), o); break;
      case 3: decode<3>(ip + 4 * m, numel, norms.data(), o); break;
      case 4: decode<4>(ip + 4 * m, numel, norms.data(), o); break;
      case 5: decode<5>(ip + 4 * m, numel, norms.data(), o); break;
      case 6: decode<6>(ip + 4 * m, numel, norms.data(), o); break;
      case 7: decode<7>(ip + 4 * m, numel, norms.data(), o); break;
      case 8: decode<8>(ip + 4 * m, numel, norms.data(), o); break;
      default: decode<9>(ip + 4 * m, numel, norms.data(), o); break;
    }
  }

 private:
  // ⌈n/B⌉ without forming n + B - 1, which overflows for a bucket_size near 2^63.
  int64_t buckets(int64_t n) const { return n > 0 ? (n - 1) / bucket_ + 1 : 0; }

  // Max-norm, or the l2 norm rounded to fp32 (its sum in the order of simd.h).
  float bucket_norm(const float* x, int64_t n) const {
    return max_norm_ ? max_abs(x, n) : static_cast<float>(std::sqrt(sum_of_squares(x, n)));
  }

  // Norms of buckets [first, last).
  void bucket_norms(const float* x, int64_t n, int64_t first, int64_t last, float* norms) const {
    for (int64_t b = first; b < last; ++b) {
      const int64_t lo = b * bucket_;
      norms[b] = bucket_norm(x + lo, std::min(bucket_, n - lo));
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
  static int64_t encode_groups(const float* x, const float* u, int64_t n,
                               const QuantizeLanes& q, uint8_t* out, const uint8_t* end) {
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
        return _mm_or_si128(level, _mm_min_epi16(_mm_and_si128(negative, sign16),
                                                 _mm_slli_epi16(level, 8)));
      };
      for (; g + 16 <= n && end - out >= 8 + B; g += 16, out += 2 * B) {
        // A line of the elements a chunk ahead on its way in while these are coded (the next
        // chunk's norms are the first pass over it).
        _mm_prefetch(reinterpret_cast<const char*>(x + g + kChunk), _MM_HINT_T0);
        const __m128i p2 = _mm_packs_epi32(_mm_madd_epi16(codes8(g), join2),
                                           _mm_madd_epi16(codes8(g + 8), join2));
        const __m128i p4 = _mm_madd_epi16(p2, join4);
        const __m128i p8 = _mm_or_si128(_mm_and_si128(p4, low4b),
                                        _mm_slli_epi64(_mm_srli_epi64(p4, 32), 4 * B));
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
      code[i] = level | ((level != 0u) & (x[i] < 0) ? sign_bit : 0u);
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
      rng.fill(static_cast<uint64_t>(c0), len, u);
#if defined(__SSE2__)
      if constexpr (B <= 8) {
        if (bucket_ % 8 == 0) {
          // Every bucket starts on a byte: the codes go straight into the stream, group by
          // group; only the last few of the stream (its last 8 bytes at most) through `code`.
          for (int64_t lo = c0; lo < c1;) {
            const int64_t b = lo / bucket_;
            const int64_t hi = std::min(c1, b * bucket_ + std::min(bucket_, n - b * bucket_));
            const float norm = norms[b];
            const float scale = norm > 0 ? s / norm : 0.0f;
            const int64_t done =
                encode_groups<B>(x + lo, u + (lo - c0), hi - lo, QuantizeLanes(scale, s, sign_bit),
                                 codes + lo / 8 * B, end);
            if (done < hi - lo) {
              quantize(x + lo + done, u + (lo - c0) + done, hi - lo - done, scale, s, sign_bit,
                       code);
              pack<B>(code, hi - lo - done, codes + (lo + done) / 8 * B);
            }
            lo = hi;
          }
          continue;
        }
      }
#endif
      for (int64_t lo = c0; lo < c1;) {
        const int64_t b = lo / bucket_;
        const int64_t hi = std::min(c1, b * bucket_ + std::min(bucket_, n - b * bucket_));
        const float norm = norms[b];
        quantize(x + lo, u + (lo - c0), hi - lo, norm > 0 ? s / norm : 0.0f, s, sign_bit,
                 code + (lo - c0));
        lo = hi;
      }
      pack<B>(code, len, codes + c0 / 8 * B);
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
      _mm_storeu_ps(out + i, _mm_xor_ps(_mm_mul_ps(_mm_andnot_ps(sign, tv), vu),
                                        _mm_and_ps(sign, tv)));
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
      return _mm_loadh_pi(lo, reinterpret_cast<const __m64*>(
                                  table.v[(w >> (2 * B * (k + 1))) & pair]));
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

  // Values into out[0, n): chunk by chunk through an L1 buffer, streamed out when large.
  template <int B>
  void decode(const uint8_t* codes, int64_t n, const float* norms, float* out) const {
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
    constexpr int bits = B - 1;  // B = bits_ + 1: constants the loop below vectorizes with
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

  int bits_;
  uint32_t levels_;
  int64_t bucket_;
  bool max_norm_;
};

class Qsgd final : public Algorithm {
 public:
  explicit Qsgd(const QsgdParams& p) : compressor_(p.bits, p.bucket_size, p.norm == "max") {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    at::Generator gen = make_generator(ctx.seed, comm.rank(), ctx.step,
                                       static_cast<uint64_t>(bucket.index));
    exchange_compressed(bucket, comm, compressor_, nullptr, gen);
  }

 private:
  QsgdCompressor compressor_;
};

}  // namespace

AlgorithmInfo qsgd_algorithm() {
  return algorithm_info<Qsgd, QsgdParams>(
      "qsgd",
      "QSGD: stochastic quantization to s = 2^bits - 1 levels of each bucket's norm, "
      "sign + level packed (bits + 1 bits per element), allgather, decode and average",
      "Alistarh, Grubic, Li, Tomioka, Vojnovic. QSGD: Communication-Efficient SGD via Gradient "
      "Quantization and Encoding. NeurIPS 2017");
}

// The QSGD codec alone (bench/compressors_bench.cpp times it against a memory pass).
std::unique_ptr<Compressor> make_qsgd_compressor(int bits, int64_t bucket_size, bool max_norm) {
  return std::make_unique<QsgdCompressor>(bits, bucket_size, max_norm);
}

}  // namespace cedar
