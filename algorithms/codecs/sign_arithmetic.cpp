#include "algorithms/codecs/sign_arithmetic.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

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

}  // namespace

void subtract_signs(const uint8_t* bits, int64_t n, float one, float zero, float* x) {
  apply_signs(bits, n, one, zero, x, [](float a, float v) { return a - v; });
}

void add_signs(const uint8_t* bits, int64_t n, float one, float zero, float* sum, float divisor) {
  if (divisor == 1.0f) {
    apply_signs(bits, n, one, zero, sum, [](float a, float v) { return a + v; });
  } else {
    apply_signs(bits, n, one, zero, sum, [divisor](float a, float v) { return (a + v) / divisor; });
  }
}

void average_signs(const uint8_t* const* bits, const float* one, const float* zero, int streams,
                   int64_t n, float divisor, float then, float* out) {
  if (streams < 1)
    throw std::invalid_argument("average_signs: " + std::to_string(streams) + " streams");
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

void majority_of_signs(const uint8_t* const* bits, int streams, int64_t n, float* out) {
  if (streams < 1 || streams > kMaxSignStreams)
    throw std::invalid_argument("majority_of_signs: " + std::to_string(streams) +
                                " streams, expected 1 to " + std::to_string(kMaxSignStreams));
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

}  // namespace cedar
