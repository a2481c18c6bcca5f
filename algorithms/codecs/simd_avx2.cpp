// The AVX2 forms of simd.cpp's reductions (avx2_kernels.h): the same eight partial sums and
// maxima, sums 0-3 and 4-7 in two registers of four fp64 lanes, maxima in one of eight fp32 lanes.
// This file calls no inline function that other files compile for another instruction set.
#include "algorithms/codecs/avx2_kernels.h"

#if defined(__AVX2__) && defined(__AES__) && defined(__VAES__)
#define CEDAR_AVX2_KERNELS 1
#include <immintrin.h>
#endif

namespace cedar {

#if defined(CEDAR_AVX2_KERNELS)
namespace {

template <bool Shifted>
int64_t sums(const float* x, int64_t n, double k, double s1[8], double s2[8], float mx[8]) {
  const __m256d kk = _mm256_set1_pd(k);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, q0 = a0, q1 = a0;
  __m256 m = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(xv));
    __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
    if constexpr (Shifted) {
      // max(|x|, m) keeps m where |x| is NaN, as std::max(m, |x|) does.
      m = _mm256_max_ps(_mm256_and_ps(xv, abs_mask), m);
      d0 = _mm256_sub_pd(d0, kk);
      d1 = _mm256_sub_pd(d1, kk);
      a0 = _mm256_add_pd(a0, d0);
      a1 = _mm256_add_pd(a1, d1);
    }
    q0 = _mm256_add_pd(q0, _mm256_mul_pd(d0, d0));
    q1 = _mm256_add_pd(q1, _mm256_mul_pd(d1, d1));
  }
  _mm256_storeu_pd(s2, q0);
  _mm256_storeu_pd(s2 + 4, q1);
  if constexpr (Shifted) {
    _mm256_storeu_pd(s1, a0);
    _mm256_storeu_pd(s1 + 4, a1);
    _mm256_storeu_ps(mx, m);
  }
  return i;
}

// Σx² of x[0, len): element i into partial sum i mod 8 (two registers of four lanes), the elements
// after the last whole group of eight into sums 0, 1, ..., then added as simd.h's
// add_partial_sums (not called here: it is compiled for the baseline elsewhere). Consecutive
// buckets' chains of additions overlap in the out-of-order core.
double bucket_sum_of_squares(const float* x, int64_t len) {
  __m256d q0 = _mm256_setzero_pd(), q1 = q0;
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const __m256d d0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d d1 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    q0 = _mm256_add_pd(q0, _mm256_mul_pd(d0, d0));
    q1 = _mm256_add_pd(q1, _mm256_mul_pd(d1, d1));
  }
  double s[8];
  _mm256_storeu_pd(s, q0);
  _mm256_storeu_pd(s + 4, q1);
  for (int64_t j = i; j < len; ++j) {
    const double d = x[j];
    s[j - i] += d * d;
  }
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

bool avx2_kernels_built() { return true; }

void bucket_sums_of_squares_avx2(const float* x, int64_t n, int64_t bucket, int64_t first,
                                 int64_t last, double* sums) {
  for (int64_t b = first; b < last; ++b) {
    const int64_t lo = b * bucket;
    sums[b - first] = bucket_sum_of_squares(x + lo, n - lo < bucket ? n - lo : bucket);
  }
}

int64_t partial_sums_avx2(bool shifted, const float* x, int64_t n, double k, double s1[8],
                          double s2[8], float mx[8]) {
  return shifted ? sums<true>(x, n, k, s1, s2, mx) : sums<false>(x, n, k, s1, s2, mx);
}

int64_t max_abs_avx2(const float* x, int64_t n, float mx[8]) {
  // Four registers of running maxima (lane j of each: elements j mod 8), joined at the end.
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m[4];
  for (auto& v : m) v = _mm256_loadu_ps(mx);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int r = 0; r < 4; ++r)
      m[r] = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i + 8 * r), abs_mask), m[r]);
  for (; i + 8 <= n; i += 8)
    m[0] = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), m[0]);
  _mm256_storeu_ps(mx, _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])));
  return i;
}

#else  // no AVX2 kernels in this build: never called (best_isa() is kBaseline)

bool avx2_kernels_built() { return false; }
int64_t partial_sums_avx2(bool, const float*, int64_t, double, double*, double*, float*) {
  return 0;
}
int64_t max_abs_avx2(const float*, int64_t, float*) { return 0; }
void bucket_sums_of_squares_avx2(const float*, int64_t, int64_t, int64_t, int64_t, double*) {}

#endif

}  // namespace cedar
