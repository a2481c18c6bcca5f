#include "algorithms/codecs/half.h"

#include <cmath>
#include <cstring>

#include "algorithms/codecs/simd.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CEDAR_HALF_F16C 1
#include <immintrin.h>

#include "algorithms/codecs/cpu_features.h"
#endif

namespace cedar {
namespace {

uint32_t bits_of(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

float float_of_bits(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

// One fp32 value to its half, in float and integer arithmetic (the portable conversion of
// c10/util/Half.h, from Maratyszcza's FP16 library), with F16C's NaN: the scaled magnitude plus a
// bias of the input's binade rounds the mantissa to the half's 10 bits (or to the subnormal
// spacing 2^-24) in the float unit, ties to even; infinities stay infinite, overflow becomes one.
// The products are powers of two times the input (exact unless they overflow to inf), so a fused
// multiply-add gives the same result.
uint16_t half_bits(float f) {
  const uint32_t w = bits_of(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  base = float_of_bits((bias >> 1) + 0x07800000u) + base;
  const uint32_t b = bits_of(base);
  const uint32_t finite = ((b >> 13) & 0x7C00u) + (b & 0x0FFFu);
  const uint32_t nan = 0x7E00u | ((w >> 13) & 0x03FFu);
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? nan : finite));
}

// One half to fp32 (c10/util/Half.h's portable conversion): normal halves re-biased by a
// power-of-two product (which also quiets a NaN, keeping its payload), subnormals as
// (0.5 + m·2^-24) − 0.5 in the float unit.
float float_of_half(uint16_t h) {
  const uint32_t w = uint32_t{h} << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normal = float_of_bits((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float subnormal = float_of_bits((two_w >> 17) | (126u << 23)) - 0.5f;
  return float_of_bits(sign | bits_of(two_w < (1u << 27) ? subnormal : normal));
}

}  // namespace

namespace half_impl {

void floats_to_halves_portable(const float* in, int64_t n, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = half_bits(in[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

void halves_to_floats_portable(const uint8_t* in, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    out[i] = float_of_half(h);
  }
}

void add_halves_to_floats_portable(const uint8_t* in, int64_t n, float* sum, float divisor) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    const float v = sum[i] + float_of_half(h);
    sum[i] = divisor == 1.0f ? v : v / divisor;
  }
}

#if defined(CEDAR_HALF_F16C)

bool have_f16c() {
  static const bool yes = __builtin_cpu_supports("avx") && cpuid_has_f16c();
  return yes;
}

namespace {

constexpr int kToNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// The fp32 values of the eight halves, or the one half, at in[0, 16) or in[0, 2).
__attribute__((target("avx,f16c"))) inline __m256 widen8(const uint8_t* in) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
}
__attribute__((target("avx,f16c"))) inline float widen1(const uint8_t* in) {
  uint16_t h;
  std::memcpy(&h, in, 2);
  return _cvtsh_ss(h);
}

}  // namespace

__attribute__((target("avx,f16c"))) void floats_to_halves_f16c(const float* in, int64_t n,
                                                               uint8_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kToNearest));
  if (i < n) {  // the last n mod 8 values through a zero-padded block
    alignas(32) float block[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    alignas(16) uint8_t halves[16];
    std::memcpy(block, in + i, static_cast<size_t>(n - i) * 4);
    _mm_store_si128(reinterpret_cast<__m128i*>(halves),
                    _mm256_cvtps_ph(_mm256_load_ps(block), kToNearest));
    std::memcpy(out + 2 * i, halves, static_cast<size_t>(n - i) * 2);
  }
}

__attribute__((target("avx,f16c"))) void halves_to_floats_f16c(const uint8_t* in, int64_t n,
                                                               float* out) {
  int64_t i = 0;
  if (stream_output(n)) {
    // Up to 32-byte alignment one value at a time, then non-temporal stores.
    for (; i < n && (reinterpret_cast<uintptr_t>(out + i) & 31); ++i) out[i] = widen1(in + 2 * i);
    for (; i + 8 <= n; i += 8) _mm256_stream_ps(out + i, widen8(in + 2 * i));
    _mm_sfence();
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, widen8(in + 2 * i));
  for (; i < n; ++i) out[i] = widen1(in + 2 * i);
}

__attribute__((target("avx,f16c"))) void add_halves_to_floats_f16c(const uint8_t* in, int64_t n,
                                                                   float* sum, float divisor) {
  int64_t i = 0;
  if (divisor == 1.0f) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(sum + i, _mm256_add_ps(_mm256_loadu_ps(sum + i), widen8(in + 2 * i)));
    for (; i < n; ++i) sum[i] += widen1(in + 2 * i);
    return;
  }
  const __m256 d = _mm256_set1_ps(divisor);
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(sum + i,
                     _mm256_div_ps(_mm256_add_ps(_mm256_loadu_ps(sum + i), widen8(in + 2 * i)), d));
  for (; i < n; ++i) sum[i] = (sum[i] + widen1(in + 2 * i)) / divisor;
}

#else  // no F16C on this architecture or compiler: the portable conversions

bool have_f16c() { return false; }
void floats_to_halves_f16c(const float* in, int64_t n, uint8_t* out) {
  floats_to_halves_portable(in, n, out);
}
void halves_to_floats_f16c(const uint8_t* in, int64_t n, float* out) {
  halves_to_floats_portable(in, n, out);
}
void add_halves_to_floats_f16c(const uint8_t* in, int64_t n, float* sum, float divisor) {
  add_halves_to_floats_portable(in, n, sum, divisor);
}

#endif

}  // namespace half_impl

void floats_to_halves(const float* in, int64_t n, uint8_t* out) {
  if (half_impl::have_f16c())
    half_impl::floats_to_halves_f16c(in, n, out);
  else
    half_impl::floats_to_halves_portable(in, n, out);
}

void halves_to_floats(const uint8_t* in, int64_t n, float* out) {
  if (half_impl::have_f16c())
    half_impl::halves_to_floats_f16c(in, n, out);
  else
    half_impl::halves_to_floats_portable(in, n, out);
}

void add_halves_to_floats(const uint8_t* in, int64_t n, float* sum, float divisor) {
  if (half_impl::have_f16c())
    half_impl::add_halves_to_floats_f16c(in, n, sum, divisor);
  else
    half_impl::add_halves_to_floats_portable(in, n, sum, divisor);
}

}  // namespace cedar
