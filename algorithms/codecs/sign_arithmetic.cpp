#include "algorithms/codecs/sign_arithmetic.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/codecs/sign_lanes.h"
#include "algorithms/codecs/simd.h"

namespace cedar {
namespace {

constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// The eight decoded values of one byte of sign bits, element k from bit k.
struct ByteValues {
  float lo[16][4];  // a half-byte's four values
  ByteValues(float one, float zero) {
    for (int b = 0; b < 16; ++b)
      for (int k = 0; k < 4; ++k) lo[b][k] = (b >> k) & 1 ? one : zero;
  }
  void of(uint8_t byte, float* v) const {
    std::memcpy(v, lo[byte & 15], 16);
    std::memcpy(v + 4, lo[byte >> 4], 16);
  }
};

// f(x[i], value of bit i) for whole bytes, then the last partial byte.
template <class Op>
void apply_signs(const uint8_t* bits, int64_t n, float one, float zero, float* x, Op op) {
  const ByteValues table(one, zero);
  const int64_t full = n / 8;
  for (int64_t j = 0; j < full; ++j) {
    float v[8];
    table.of(bits[j], v);
    float* xj = x + 8 * j;
    for (int k = 0; k < 8; ++k) xj[k] = op(xj[k], v[k]);
  }
  for (int64_t i = full * 8; i < n; ++i)
    x[i] = op(x[i], (bits[full] >> (i - full * 8)) & 1 ? one : zero);
}

void subtract_signs_portable(const uint8_t* bits, int64_t n, float one, float zero, float* x) {
  apply_signs(bits, n, one, zero, x, [](float a, float v) { return a - v; });
}

void add_signs_portable(const uint8_t* bits, int64_t n, float one, float zero, float* sum,
                        float divisor) {
  if (divisor == 1.0f) {
    apply_signs(bits, n, one, zero, sum, [](float a, float v) { return a + v; });
  } else {
    apply_signs(bits, n, one, zero, sum, [divisor](float a, float v) { return (a + v) / divisor; });
  }
}

void average_signs_portable(const uint8_t* const* bits, const float* one, const float* zero,
                            int streams, int64_t n, float divisor, float then, float* out) {
  // Blocks of whole bytes that stay in the L1 cache while every stream is added into them.
  constexpr int64_t kBlock = 2048;
  for (int64_t c0 = 0; c0 < n; c0 += kBlock) {
    const int64_t m = std::min(kBlock, n - c0);
    float* o = out + c0;
    apply_signs(bits[0] + c0 / 8, m, one[0], zero[0], o, [](float, float v) { return v; });
    for (int s = 1; s < streams; ++s) {
      const uint8_t* b = bits[s] + c0 / 8;
      if (s + 1 == streams && divisor != 1.0f) {
        apply_signs(b, m, one[s], zero[s], o,
                    [divisor](float a, float v) { return (a + v) / divisor; });
      } else {
        apply_signs(b, m, one[s], zero[s], o, [](float a, float v) { return a + v; });
      }
    }
    if (then != 1.0f)
      for (int64_t i = 0; i < m; ++i) o[i] = o[i] / then;
  }
}

void majority_of_signs_portable(const uint8_t* const* bits, int streams, int64_t n, float* out) {
  // Per block of elements, the number of 1 bits of each element over the streams, in 16-bit
  // counters added four at a time: a half-byte's four 0/1 counts as one 64-bit word.
  constexpr int64_t kBlock = 4096;
  uint64_t nibble[16];
  for (int b = 0; b < 16; ++b) {
    nibble[b] = 0;
    for (int k = 0; k < 4; ++k) nibble[b] |= static_cast<uint64_t>((b >> k) & 1) << (16 * k);
  }
  uint64_t words[kBlock / 4];
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const int64_t len = std::min(kBlock, n - b0);
    const int64_t bytes = (len + 7) / 8;
    std::fill(words, words + 2 * bytes, uint64_t{0});
    for (int r = 0; r < streams; ++r) {
      const uint8_t* p = bits[r] + b0 / 8;
      for (int64_t j = 0; j < bytes; ++j) {
        words[2 * j] += nibble[p[j] & 15];
        words[2 * j + 1] += nibble[p[j] >> 4];
      }
    }
    // The sum of the ±1 values is 2·ones − streams; its sign as (0 < v) − (v < 0). Element i's
    // count is lane i mod 4 of word i / 4, which on a little-endian CPU is the i-th uint16 of
    // the words' bytes (copied out so that the loop below vectorises).
    uint16_t ones[kBlock];
    if constexpr (kLittleEndian) {
      std::memcpy(ones, words, sizeof(uint16_t) * static_cast<size_t>(len));
    } else {
      for (int64_t i = 0; i < len; ++i)
        ones[i] = static_cast<uint16_t>(words[i / 4] >> (16 * (i % 4)));
    }
    float* o = out + b0;
    for (int64_t i = 0; i < len; ++i) {
      const int v = 2 * static_cast<int>(ones[i]) - streams;
      o[i] = static_cast<float>((0 < v) - (v < 0));
    }
  }
}

#if defined(CEDAR_SIGN_LANES)
// The AVX2 forms: each takes the whole words of 32 elements (bytes 4w to 4w + 3 of every stream)
// and returns the count done, a multiple of 32; the portable loops take the rest. Every lane
// computes the fp32 operation of its element as the loops do.

// x[i] <- x[i] - v_i (Add: (x[i] + v_i), then / divisor unless it is 1).
template <bool Add>
CEDAR_SIGN_LANES_TARGET int64_t apply_signs_avx2(const uint8_t* bits, int64_t n, float one,
                                                 float zero, float* x, float divisor) {
  const __m256 v1 = _mm256_set1_ps(one), v0 = _mm256_set1_ps(zero);
  const __m256 div = _mm256_set1_ps(divisor);
  const bool divide = Add && divisor != 1.0f;
  const int64_t words = n / 32;
  for (int64_t w = 0; w < words; ++w) {
    const __m256i b = _mm256_set1_epi32(static_cast<int>(sign_lanes::word(bits, w)));
    for (int g = 0; g < 4; ++g) {
      float* p = x + 32 * w + 8 * g;
      const __m256 v = sign_lanes::values(sign_lanes::mask(b, g), v1, v0);
      __m256 a = _mm256_loadu_ps(p);
      if constexpr (Add) {
        a = _mm256_add_ps(a, v);
        if (divide) a = _mm256_div_ps(a, div);
      } else {
        a = _mm256_sub_ps(a, v);
      }
      _mm256_storeu_ps(p, a);
    }
  }
  return 32 * words;
}

// Every stream's value added in registers, stream after stream, for each group of eight. An
// output larger than the caches is written by non-temporal stores where it is 32-byte aligned
// (simd.h: stream_output), as the sign decoder writes its own.
CEDAR_SIGN_LANES_TARGET int64_t average_signs_avx2(const uint8_t* const* bits, const float* one,
                                                   const float* zero, int streams, int64_t n,
                                                   float divisor, float then, float* out) {
  const __m256 div = _mm256_set1_ps(divisor), by = _mm256_set1_ps(then);
  const bool stream =
      kStreamingStores && stream_output(n) && (reinterpret_cast<uintptr_t>(out) & 31) == 0;
  const int64_t words = n / 32;
  for (int64_t w = 0; w < words; ++w) {
    // Stream s's eight values of group g.
    auto stream_values = [&](int s, __m256i b, int g) CEDAR_SIGN_LANES_TARGET {
      return sign_lanes::values(sign_lanes::mask(b, g), _mm256_set1_ps(one[s]),
                                _mm256_set1_ps(zero[s]));
    };
    const __m256i first = _mm256_set1_epi32(static_cast<int>(sign_lanes::word(bits[0], w)));
    __m256 acc[4] = {stream_values(0, first, 0), stream_values(0, first, 1),
                     stream_values(0, first, 2), stream_values(0, first, 3)};
    for (int s = 1; s < streams; ++s) {
      const __m256i b = _mm256_set1_epi32(static_cast<int>(sign_lanes::word(bits[s], w)));
      const bool divide = s + 1 == streams && divisor != 1.0f;
      for (int g = 0; g < 4; ++g) {
        acc[g] = _mm256_add_ps(acc[g], stream_values(s, b, g));
        if (divide) acc[g] = _mm256_div_ps(acc[g], div);
      }
    }
    for (int g = 0; g < 4; ++g) {
      if (then != 1.0f) acc[g] = _mm256_div_ps(acc[g], by);
      if (stream) {
        _mm256_stream_ps(out + 32 * w + 8 * g, acc[g]);
      } else {
        _mm256_storeu_ps(out + 32 * w + 8 * g, acc[g]);
      }
    }
  }
  if (stream) store_fence();
  return 32 * words;
}

// Each element's count of 1 bits over the streams in a 32-bit lane; the sign of 2·ones − streams.
CEDAR_SIGN_LANES_TARGET int64_t majority_of_signs_avx2(const uint8_t* const* bits, int streams,
                                                       int64_t n, float* out) {
  const __m256i total = _mm256_set1_epi32(streams), zero = _mm256_setzero_si256();
  const int64_t words = n / 32;
  for (int64_t w = 0; w < words; ++w) {
    __m256i ones[4] = {zero, zero, zero, zero};
    for (int s = 0; s < streams; ++s) {
      const __m256i b = _mm256_set1_epi32(static_cast<int>(sign_lanes::word(bits[s], w)));
      for (int g = 0; g < 4; ++g) ones[g] = _mm256_sub_epi32(ones[g], sign_lanes::mask(b, g));
    }
    for (int g = 0; g < 4; ++g) {
      const __m256i v = _mm256_sub_epi32(_mm256_add_epi32(ones[g], ones[g]), total);
      // (0 < v) − (v < 0) from the all-ones comparisons: (−(v < 0)) − (−(0 < v)).
      const __m256i sign =
          _mm256_sub_epi32(_mm256_cmpgt_epi32(zero, v), _mm256_cmpgt_epi32(v, zero));
      _mm256_storeu_ps(out + 32 * w + 8 * g, _mm256_cvtepi32_ps(sign));
    }
  }
  return 32 * words;
}
#endif

// Every stream's bits from element `done` on (a multiple of 8).
std::vector<const uint8_t*> from(const uint8_t* const* bits, int streams, int64_t done) {
  std::vector<const uint8_t*> rest(static_cast<size_t>(streams));
  for (int s = 0; s < streams; ++s) rest[static_cast<size_t>(s)] = bits[s] + done / 8;
  return rest;
}

}  // namespace

namespace simd_impl {

void subtract_signs(bool avx2, const uint8_t* bits, int64_t n, float one, float zero, float* x) {
  int64_t done = 0;
#if defined(CEDAR_SIGN_LANES)
  if (avx2) done = apply_signs_avx2<false>(bits, n, one, zero, x, 1.0f);
#endif
  subtract_signs_portable(bits + done / 8, n - done, one, zero, x + done);
}

void add_signs(bool avx2, const uint8_t* bits, int64_t n, float one, float zero, float* sum,
               float divisor) {
  int64_t done = 0;
#if defined(CEDAR_SIGN_LANES)
  if (avx2) done = apply_signs_avx2<true>(bits, n, one, zero, sum, divisor);
#endif
  add_signs_portable(bits + done / 8, n - done, one, zero, sum + done, divisor);
}

void average_signs(bool avx2, const uint8_t* const* bits, const float* one, const float* zero,
                   int streams, int64_t n, float divisor, float then, float* out) {
  if (streams < 1)
    throw std::invalid_argument("average_signs: " + std::to_string(streams) + " streams");
  int64_t done = 0;
#if defined(CEDAR_SIGN_LANES)
  if (avx2) done = average_signs_avx2(bits, one, zero, streams, n, divisor, then, out);
#endif
  if (done == n) return;
  const std::vector<const uint8_t*> rest = from(bits, streams, done);
  average_signs_portable(rest.data(), one, zero, streams, n - done, divisor, then, out + done);
}

void majority_of_signs(bool avx2, const uint8_t* const* bits, int streams, int64_t n, float* out) {
  if (streams < 1 || streams > kMaxSignStreams)
    throw std::invalid_argument("majority_of_signs: " + std::to_string(streams) +
                                " streams, expected 1 to " + std::to_string(kMaxSignStreams));
  int64_t done = 0;
#if defined(CEDAR_SIGN_LANES)
  if (avx2) done = majority_of_signs_avx2(bits, streams, n, out);
#endif
  if (done == n) return;
  const std::vector<const uint8_t*> rest = from(bits, streams, done);
  majority_of_signs_portable(rest.data(), streams, n - done, out + done);
}

}  // namespace simd_impl

void subtract_signs(const uint8_t* bits, int64_t n, float one, float zero, float* x) {
  simd_impl::subtract_signs(simd_impl::have_avx2(), bits, n, one, zero, x);
}

void add_signs(const uint8_t* bits, int64_t n, float one, float zero, float* sum, float divisor) {
  simd_impl::add_signs(simd_impl::have_avx2(), bits, n, one, zero, sum, divisor);
}

void average_signs(const uint8_t* const* bits, const float* one, const float* zero, int streams,
                   int64_t n, float divisor, float then, float* out) {
  simd_impl::average_signs(simd_impl::have_avx2(), bits, one, zero, streams, n, divisor, then, out);
}

void majority_of_signs(const uint8_t* const* bits, int streams, int64_t n, float* out) {
  simd_impl::majority_of_signs(simd_impl::have_avx2(), bits, streams, n, out);
}

}  // namespace cedar
