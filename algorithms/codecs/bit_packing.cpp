#include "algorithms/codecs/bit_packing.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CEDAR_PACK_AVX2 1
#include <immintrin.h>
#endif

#include "algorithms/codecs/sign_lanes.h"
#include "algorithms/codecs/simd.h"

namespace cedar {
namespace {

void check_bits(int bits) {
  if (bits < 1 || bits > kMaxPackedBits)
    throw std::invalid_argument("bit packing: bits must be in [1, " +
                                std::to_string(kMaxPackedBits) + "], got " + std::to_string(bits));
}

// Returns the OR of every code (to check the range once, outside the loop).
template <class T>
uint64_t pack_codes(const T* in, int64_t n, int bits, uint8_t* out) {
  uint64_t all = 0;
  if (8 % bits == 0) {
    // Whole codes per byte (b = 1, 2, 4, 8): one byte per group, no carry between bytes.
    const int per = 8 / bits;
    const int64_t full = n / per;
    for (int64_t j = 0; j < full; ++j) {
      const T* g = in + j * per;
      uint32_t byte = 0;
      for (int k = 0; k < per; ++k) {
        uint64_t c = static_cast<uint64_t>(g[k]);
        all |= c;
        byte |= static_cast<uint32_t>(c & 0xff) << (k * bits);
      }
      out[j] = static_cast<uint8_t>(byte);
    }
    if (full * per < n) {
      uint32_t byte = 0;
      for (int64_t i = full * per; i < n; ++i) {
        uint64_t c = static_cast<uint64_t>(in[i]);
        all |= c;
        byte |= static_cast<uint32_t>(c & 0xff) << ((i - full * per) * bits);
      }
      out[full] = static_cast<uint8_t>(byte);
    }
    return all;
  }
  BitWriter w(out, bits);
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t c = static_cast<uint64_t>(in[i]);
    all |= c;
    w.put(static_cast<uint32_t>(c & mask));
  }
  w.finish();
  return all;
}

template <class T>
void unpack_codes(const uint8_t* in, int64_t n, int bits, T* out) {
  if (8 % bits == 0) {
    const int per = 8 / bits;
    const uint32_t mask = (1u << bits) - 1;
    const int64_t full = n / per;
    for (int64_t j = 0; j < full; ++j) {
      const uint32_t byte = in[j];
      T* g = out + j * per;
      for (int k = 0; k < per; ++k) g[k] = static_cast<T>((byte >> (k * bits)) & mask);
    }
    for (int64_t i = full * per; i < n; ++i)
      out[i] = static_cast<T>((in[full] >> ((i - full * per) * bits)) & mask);
    return;
  }
  BitReader r(in, bits);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(r.get());
}

}  // namespace

at::Tensor pack_bits(const at::Tensor& codes, int bits) {
  check_bits(bits);
  at::Tensor c = codes.contiguous().cpu().reshape({-1});
  const int64_t n = c.numel();
  at::Tensor out = at::empty({packed_bytes(n, bits)}, at::kByte);
  uint8_t* o = out.data_ptr<uint8_t>();
  uint64_t all = 0;
  switch (c.scalar_type()) {
    case at::kBool: all = pack_codes(c.data_ptr<bool>(), n, bits, o); break;
    case at::kByte: all = pack_codes(c.data_ptr<uint8_t>(), n, bits, o); break;
    case at::kChar: all = pack_codes(c.data_ptr<int8_t>(), n, bits, o); break;
    case at::kShort: all = pack_codes(c.data_ptr<int16_t>(), n, bits, o); break;
    case at::kInt: all = pack_codes(c.data_ptr<int32_t>(), n, bits, o); break;
    case at::kLong: all = pack_codes(c.data_ptr<int64_t>(), n, bits, o); break;
    default:
      throw std::invalid_argument(std::string("pack_bits: codes must be an integer tensor, got ") +
                                  c10::toString(c.scalar_type()));
  }
  if (all >> bits)
    throw std::invalid_argument("pack_bits: a code does not fit in " + std::to_string(bits) +
                                " bits (codes must be in [0, 2^bits))");
  return out;
}

at::Tensor unpack_bits(const at::Tensor& bytes, int64_t n, int bits) {
  check_bits(bits);
  // packed_bytes of a negative count can be 0, which an empty payload would match.
  if (n < 0) throw std::invalid_argument("unpack_bits: negative code count " + std::to_string(n));
  if (bytes.scalar_type() != at::kByte || bytes.numel() != packed_bytes(n, bits))
    throw std::invalid_argument(
        "unpack_bits: expected " + std::to_string(packed_bytes(n, bits)) + " uint8 bytes for " +
        std::to_string(n) + " codes of " + std::to_string(bits) + " bits, got " +
        std::to_string(bytes.numel()) + " of " + c10::toString(bytes.scalar_type()));
  at::Tensor in = bytes.contiguous().cpu();
  const uint8_t* p = in.data_ptr<uint8_t>();
  if (bits <= 8) {
    at::Tensor out = at::empty({n}, at::kByte);
    unpack_codes(p, n, bits, out.data_ptr<uint8_t>());
    return out;
  }
  at::Tensor out = at::empty({n}, at::kInt);
  unpack_codes(p, n, bits, out.data_ptr<int32_t>());
  return out;
}

namespace simd_impl {

void pack_signs_sse2(const float* x, int64_t n, uint8_t* out) {
  const int64_t full = n / 8;
  int64_t j = 0;
#if defined(__SSE2__)
  const __m128 zero = _mm_setzero_ps();
  for (; j < full; ++j) {
    // Ordered x >= 0: false for NaN, true for -0, as at::ge.
    const int lo = _mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(x + 8 * j), zero));
    const int hi = _mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(x + 8 * j + 4), zero));
    out[j] = static_cast<uint8_t>(lo | hi << 4);
  }
#endif
  for (; j < full; ++j) {
    uint32_t byte = 0;
    for (int k = 0; k < 8; ++k) byte |= static_cast<uint32_t>(x[8 * j + k] >= 0) << k;
    out[j] = static_cast<uint8_t>(byte);
  }
  if (full * 8 < n) {
    uint32_t byte = 0;
    for (int64_t i = full * 8; i < n; ++i)
      byte |= static_cast<uint32_t>(x[i] >= 0) << (i - full * 8);
    out[full] = static_cast<uint8_t>(byte);
  }
}

#if defined(CEDAR_PACK_AVX2)
__attribute__((target("avx2"))) void pack_signs_avx2(const float* x, int64_t n, uint8_t* out) {
  const int64_t full = n / 8;
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t j = 0; j < full; ++j)  // ordered x >= 0, as above
    out[j] = static_cast<uint8_t>(
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8 * j), zero, _CMP_GE_OQ)));
  pack_signs_sse2(x + 8 * full, n - 8 * full, out + full);
}
#else
void pack_signs_avx2(const float* x, int64_t n, uint8_t* out) { pack_signs_sse2(x, n, out); }
#endif

}  // namespace simd_impl

void pack_signs(const float* x, int64_t n, uint8_t* out) {
  if (simd_impl::have_avx2())
    simd_impl::pack_signs_avx2(x, n, out);
  else
    simd_impl::pack_signs_sse2(x, n, out);
}

void unpack_signs(const at::Tensor& bytes, int64_t n, float one, float zero, float* out) {
  if (n < 0) throw std::invalid_argument("unpack_signs: negative count " + std::to_string(n));
  if (bytes.scalar_type() != at::kByte || bytes.numel() != packed_bytes(n, 1))
    throw std::invalid_argument("unpack_signs: expected " + std::to_string(packed_bytes(n, 1)) +
                                " uint8 bytes for " + std::to_string(n) + " signs, got " +
                                std::to_string(bytes.numel()) + " of " +
                                c10::toString(bytes.scalar_type()));
  at::Tensor in = bytes.contiguous().cpu();
  unpack_signs_into(in.data_ptr<uint8_t>(), n, one, zero, out);
}

at::Tensor unpack_signs(const at::Tensor& bytes, int64_t n, float one, float zero) {
  at::Tensor out = at::empty({std::max<int64_t>(n, 0)}, at::kFloat);
  unpack_signs(bytes, n, one, zero, out.data_ptr<float>());
  return out;
}

namespace {

void unpack_signs_portable(const uint8_t* p, int64_t n, float one, float zero, float* o) {
  // The four values of every half-byte: each byte becomes two 16-byte copies.
  alignas(16) float nibble[16][4];
  for (int b = 0; b < 16; ++b)
    for (int k = 0; k < 4; ++k) nibble[b][k] = (b >> k) & 1 ? one : zero;
  const int64_t full = n / 8;
  int64_t j = 0;
  if (kStreamingStores && stream_output(n)) {
    // Unaligned head byte by byte, then whole aligned 32-byte groups with non-temporal stores.
    for (; j < full && (reinterpret_cast<uintptr_t>(o + 8 * j) & 15); ++j) {
      std::memcpy(o + 8 * j, nibble[p[j] & 15], 16);
      std::memcpy(o + 8 * j + 4, nibble[p[j] >> 4], 16);
    }
    for (; j < full; ++j) {
      stream4(o + 8 * j, nibble[p[j] & 15]);
      stream4(o + 8 * j + 4, nibble[p[j] >> 4]);
    }
    store_fence();
  }
  for (; j < full; ++j) {
    std::memcpy(o + 8 * j, nibble[p[j] & 15], 16);
    std::memcpy(o + 8 * j + 4, nibble[p[j] >> 4], 16);
  }
  for (int64_t i = full * 8; i < n; ++i) o[i] = (p[full] >> (i - full * 8)) & 1 ? one : zero;
}

#if defined(CEDAR_SIGN_LANES)
// Whole words of 32 elements (4 bytes of bits) at a time; returns the count done.
CEDAR_SIGN_LANES_TARGET int64_t unpack_signs_avx2(const uint8_t* p, int64_t n, float one,
                                                  float zero, float* o) {
  const __m256 v1 = _mm256_set1_ps(one), v0 = _mm256_set1_ps(zero);
  // Non-temporal stores as the portable form makes them, where `o` is 32-byte aligned.
  const bool stream =
      kStreamingStores && stream_output(n) && (reinterpret_cast<uintptr_t>(o) & 31) == 0;
  const int64_t words = n / 32;
  for (int64_t w = 0; w < words; ++w) {
    const __m256i b = _mm256_set1_epi32(static_cast<int>(sign_lanes::word(p, w)));
    for (int g = 0; g < 4; ++g) {
      const __m256 v = sign_lanes::values(sign_lanes::mask(b, g), v1, v0);
      if (stream) {
        _mm256_stream_ps(o + 32 * w + 8 * g, v);
      } else {
        _mm256_storeu_ps(o + 32 * w + 8 * g, v);
      }
    }
  }
  if (stream) store_fence();
  return 32 * words;
}
#endif

}  // namespace

namespace simd_impl {

void unpack_signs_into(bool avx2, const uint8_t* p, int64_t n, float one, float zero, float* o) {
  int64_t done = 0;
#if defined(CEDAR_SIGN_LANES)
  if (avx2) done = unpack_signs_avx2(p, n, one, zero, o);
#endif
  unpack_signs_portable(p + done / 8, n - done, one, zero, o + done);
}

}  // namespace simd_impl

void unpack_signs_into(const uint8_t* p, int64_t n, float one, float zero, float* o) {
  simd_impl::unpack_signs_into(simd_impl::have_avx2(), p, n, one, zero, o);
}

}  // namespace cedar
