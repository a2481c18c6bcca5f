#include "algorithms/codecs/simd.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/codecs/avx2_kernels.h"
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CEDAR_SIMD_AVX2 1
#include <immintrin.h>

#include "algorithms/codecs/cpu_features.h"
#endif

namespace cedar {
namespace {

bool cpu_has(Isa isa) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("aes");
  return isa == Isa::kAvx2 ? avx2 : avx2 && cpuid_has_vaes();
#else
  return false;
#endif
}

// Σd² into s2[8] (d_i = x_i, or x_i − k when Shifted, in fp64) in the eight-partial-sum order;
// when Shifted also Σd into s1[8] and the running maxima of |x_i| into mx[8] (NaNs skipped).
// Every array starts at zero.
template <bool Shifted>
void partial_sums(const float* x, int64_t n, double k, double s1[8], double s2[8], float mx[8],
                  Isa isa) {
  int64_t i = 0;
  if (isa != Isa::kBaseline) i = partial_sums_avx2(Shifted, x, n, k, s1, s2, mx);
#if defined(__SSE2__)
  // The loops below with the eight sums and maxima in registers: lanes (0,1) (2,3) (4,5) (6,7).
  if (isa == Isa::kBaseline && n >= 8) {
    const __m128d kk = _mm_set1_pd(k);
    const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128d a[4], q[4];
    for (int j = 0; j < 4; ++j) a[j] = q[j] = _mm_setzero_pd();
    __m128 m0 = _mm_setzero_ps(), m1 = _mm_setzero_ps();
    for (; i + 8 <= n; i += 8) {
      const __m128 x0 = _mm_loadu_ps(x + i), x1 = _mm_loadu_ps(x + i + 4);
      __m128d d[4] = {_mm_cvtps_pd(x0), _mm_cvtps_pd(_mm_movehl_ps(x0, x0)), _mm_cvtps_pd(x1),
                      _mm_cvtps_pd(_mm_movehl_ps(x1, x1))};
      if constexpr (Shifted) {
        // max(|x|, m) keeps m where |x| is NaN, as std::max(m, |x|) does.
        m0 = _mm_max_ps(_mm_and_ps(x0, abs_mask), m0);
        m1 = _mm_max_ps(_mm_and_ps(x1, abs_mask), m1);
        for (int j = 0; j < 4; ++j) {
          d[j] = _mm_sub_pd(d[j], kk);
          a[j] = _mm_add_pd(a[j], d[j]);
        }
      }
      for (int j = 0; j < 4; ++j) q[j] = _mm_add_pd(q[j], _mm_mul_pd(d[j], d[j]));
    }
    for (int j = 0; j < 4; ++j) _mm_storeu_pd(s2 + 2 * j, q[j]);
    if constexpr (Shifted) {
      _mm_storeu_ps(mx, m0);
      _mm_storeu_ps(mx + 4, m1);
      for (int j = 0; j < 4; ++j) _mm_storeu_pd(s1 + 2 * j, a[j]);
    }
  }
#endif
  auto add = [&](int j, float e) {
    if constexpr (Shifted) {
      const double d = e - k;
      s1[j] += d;
      s2[j] += d * d;
      mx[j] = std::max(mx[j], std::fabs(e));
    } else {
      const double d = e;
      s2[j] += d * d;
    }
  };
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) add(j, x[i + j]);
  for (int j = 0; i < n; ++i, ++j) add(j, x[i]);
}

// Where the distance kernels write as they go: with Copy, to_k = x_k (to may be y itself), or
// y_k with FromY (to may be x itself); with Diff, diff_k = x_k − y_k, the fp32 difference the
// sum squares.
struct DistanceOutputs {
  float* to = nullptr;
  float* diff = nullptr;
};

// The steps of squared_distance from element i on, one element at a time into s[j], j = i mod 8
// (i a multiple of 8), with the writes of Copy and Diff.
template <bool Copy, bool Diff = false, bool FromY = false>
double squared_distance_rest(const float* x, const float* y, int64_t i, int64_t n, double s[8],
                             DistanceOutputs out) {
  auto add = [&](int j, int64_t k) {
    const float xk = x[k], yk = y[k];
    const float f = xk - yk;
    const double d = f;  // the fp32 difference, widened
    s[j] += d * d;
    if constexpr (Diff) out.diff[k] = f;
    if constexpr (Copy) out.to[k] = FromY ? yk : xk;
  };
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) add(j, i + j);
  for (int j = 0; i < n; ++i, ++j) add(j, i);
  return add_partial_sums(s);
}

template <bool Copy, bool Diff = false, bool FromY = false>
double distance_sse2(const float* x, const float* y, int64_t n, DistanceOutputs out) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
#if defined(__SSE2__)
  if (n >= 8) {  // the eight sums in registers: lanes (0,1) (2,3) (4,5) (6,7)
    __m128d q[4];
    for (int j = 0; j < 4; ++j) q[j] = _mm_setzero_pd();
    for (; i + 8 <= n; i += 8) {
      const __m128 x0 = _mm_loadu_ps(x + i), x1 = _mm_loadu_ps(x + i + 4);
      const __m128 y0 = _mm_loadu_ps(y + i), y1 = _mm_loadu_ps(y + i + 4);
      const __m128 d0 = _mm_sub_ps(x0, y0);
      const __m128 d1 = _mm_sub_ps(x1, y1);
      if constexpr (Diff) {
        _mm_storeu_ps(out.diff + i, d0);
        _mm_storeu_ps(out.diff + i + 4, d1);
      }
      if constexpr (Copy) {
        _mm_storeu_ps(out.to + i, FromY ? y0 : x0);
        _mm_storeu_ps(out.to + i + 4, FromY ? y1 : x1);
      }
      const __m128d d[4] = {_mm_cvtps_pd(d0), _mm_cvtps_pd(_mm_movehl_ps(d0, d0)), _mm_cvtps_pd(d1),
                            _mm_cvtps_pd(_mm_movehl_ps(d1, d1))};
      for (int j = 0; j < 4; ++j) q[j] = _mm_add_pd(q[j], _mm_mul_pd(d[j], d[j]));
    }
    for (int j = 0; j < 4; ++j) _mm_storeu_pd(s + 2 * j, q[j]);
  }
#endif
  return squared_distance_rest<Copy, Diff, FromY>(x, y, i, n, s, out);
}

#if defined(CEDAR_SIMD_AVX2)
// The same with the eight sums in two 256-bit registers: lanes (0..3) (4..7).
template <bool Copy, bool Diff = false, bool FromY = false>
__attribute__((target("avx2"))) double distance_avx2(const float* x, const float* y, int64_t n,
                                                     DistanceOutputs out) {
  __m256d q0 = _mm256_setzero_pd(), q1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i), w = _mm256_loadu_ps(y + i);
    const __m256 d = _mm256_sub_ps(v, w);
    if constexpr (Diff) _mm256_storeu_ps(out.diff + i, d);
    if constexpr (Copy) _mm256_storeu_ps(out.to + i, FromY ? w : v);
    const __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(d));
    const __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(d, 1));
    q0 = _mm256_add_pd(q0, _mm256_mul_pd(d0, d0));
    q1 = _mm256_add_pd(q1, _mm256_mul_pd(d1, d1));
  }
  double s[8];
  _mm256_storeu_pd(s, q0);
  _mm256_storeu_pd(s + 4, q1);
  return squared_distance_rest<Copy, Diff, FromY>(x, y, i, n, s, out);
}
#else
template <bool Copy, bool Diff = false, bool FromY = false>
double distance_avx2(const float* x, const float* y, int64_t n, DistanceOutputs out) {
  return distance_sse2<Copy, Diff, FromY>(x, y, n, out);
}
#endif

}  // namespace

namespace simd_impl {

bool have_avx2() {
#if defined(CEDAR_SIMD_AVX2)
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
#else
  return false;
#endif
}

}  // namespace simd_impl

bool isa_supported(Isa isa) {
  if (isa == Isa::kBaseline) return true;
  static const bool avx2 = avx2_kernels_built() && cpu_has(Isa::kAvx2);
  static const bool vaes = avx2 && cpu_has(Isa::kAvx2Vaes);
  return isa == Isa::kAvx2 ? avx2 : vaes;
}

Isa best_isa() {
  static const Isa best = isa_supported(Isa::kAvx2Vaes) ? Isa::kAvx2Vaes
                          : isa_supported(Isa::kAvx2)   ? Isa::kAvx2
                                                        : Isa::kBaseline;
  return best;
}

double sum_of_squares(const float* x, int64_t n, Isa isa) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  partial_sums<false>(x, n, 0, nullptr, s, nullptr, isa);
  return add_partial_sums(s);
}

void bucket_sums_of_squares(const float* x, int64_t n, int64_t bucket, int64_t first, int64_t last,
                            double* sums, Isa isa) {
  if (isa != Isa::kBaseline) return bucket_sums_of_squares_avx2(x, n, bucket, first, last, sums);
  for (int64_t b = first; b < last; ++b) {
    const int64_t lo = b * bucket;
    sums[b - first] = sum_of_squares(x + lo, std::min(bucket, n - lo), isa);
  }
}

namespace simd_impl {

double squared_distance_sse2(const float* x, float* y, int64_t n, bool copy) {
  return copy ? distance_sse2<true>(x, y, n, {y, nullptr}) : distance_sse2<false>(x, y, n, {});
}

double squared_distance_avx2(const float* x, float* y, int64_t n, bool copy) {
  return copy ? distance_avx2<true>(x, y, n, {y, nullptr}) : distance_avx2<false>(x, y, n, {});
}

double squared_distance_with_difference_sse2(const float* x, const float* y, float* diff,
                                             float* copy, int64_t n) {
  return distance_sse2<true, true>(x, y, n, {copy, diff});
}

double squared_distance_then_take_sse2(float* x, const float* y, float* diff, int64_t n) {
  return distance_sse2<true, true, true>(x, y, n, {x, diff});
}

double squared_distance_then_take_avx2(float* x, const float* y, float* diff, int64_t n) {
  return distance_avx2<true, true, true>(x, y, n, {x, diff});
}

double squared_distance_with_difference_avx2(const float* x, const float* y, float* diff,
                                             float* copy, int64_t n) {
  return distance_avx2<true, true>(x, y, n, {copy, diff});
}

}  // namespace simd_impl

double squared_distance(const float* x, const float* y, int64_t n) {
  return simd_impl::have_avx2() ? distance_avx2<false>(x, y, n, {})
                                : distance_sse2<false>(x, y, n, {});
}

double squared_distance_with_difference(const float* x, const float* y, float* diff, float* copy,
                                        int64_t n) {
  return simd_impl::have_avx2()
             ? simd_impl::squared_distance_with_difference_avx2(x, y, diff, copy, n)
             : simd_impl::squared_distance_with_difference_sse2(x, y, diff, copy, n);
}

double squared_distance_then_take(float* x, const float* y, float* diff, int64_t n) {
  return simd_impl::have_avx2() ? simd_impl::squared_distance_then_take_avx2(x, y, diff, n)
                                : simd_impl::squared_distance_then_take_sse2(x, y, diff, n);
}

double squared_distance_then_copy(const float* x, float* y, int64_t n) {
  return simd_impl::have_avx2() ? simd_impl::squared_distance_avx2(x, y, n, true)
                                : simd_impl::squared_distance_sse2(x, y, n, true);
}

void accumulate_scaled(float* e, const float* g, int64_t n, float scale) {
  // Two statements: the product is rounded before the sum (the baseline target has no FMA to
  // contract them into either).
  for (int64_t i = 0; i < n; ++i) {
    const float product = g[i] * scale;
    e[i] = e[i] + product;
  }
}

float max_abs(const float* x, int64_t n, Isa isa) {
  float mx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = isa != Isa::kBaseline ? max_abs_avx2(x, n, mx) : 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) mx[j] = std::max(mx[j], std::fabs(x[i + j]));
  for (; i < n; ++i) mx[0] = std::max(mx[0], std::fabs(x[i]));
  float r = 0;
  for (float v : mx) r = std::max(r, v);
  return r;
}

ShiftedSums shifted_sums(const float* x, int64_t n, double k, Isa isa) {
  float mx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  double s1[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s2[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  partial_sums<true>(x, n, k, s1, s2, mx, isa);
  ShiftedSums r;
  r.sum = add_partial_sums(s1);
  r.sum_sq = add_partial_sums(s2);
  for (float v : mx) r.max_abs = std::max(r.max_abs, v);
  return r;
}

void store_floats(float* dst, const float* src, int64_t n, bool stream) {
  int64_t i = 0;
#if defined(__SSE2__)
  if (stream) {
    for (; i < n && (reinterpret_cast<uintptr_t>(dst + i) & 15); ++i) dst[i] = src[i];
    for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
  }
#endif
  if (i < n) std::memcpy(dst + i, src + i, static_cast<size_t>(n - i) * sizeof(float));
}

}  // namespace cedar
