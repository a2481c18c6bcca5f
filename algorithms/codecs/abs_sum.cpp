// add_abs_in_order (simd.h): the plain loop s += |x_i|, whose n dependent fp64 additions take one
// addition latency each, computed in vector registers over runs of elements whose additions by
// the loop are known in advance, so that the run's sum in any order is the loop's.
//
// Per block of up to kChunk elements from s0 ≥ 0: a power of two B, u = B·2^-52 (the spacing of
// fp64 values in [B, 2B)), L = B·2^-29 in fp32 (fp32 values from L up are multiples of u). Let
// R(v) be v = |x| rounded to the nearest multiple of u: v itself from L up; below L, (v + L) − L
// in fp32 (the sum lies in [L, 2L), where the fp32 spacing is u), except at a tie, v half-way
// between two multiples, |R(v) − v| = u/2.
//   Exact runs (s0 < B): while s and the values are multiples of u (R(v) == v) and the sums stay
//   below 2B, every partial sum of the loop is a multiple of u below 2^53·u, hence exact.
//   Rounded runs (s0 ≥ B, so every s is in [B, 2B) while below 2B): with s a multiple of u, the
//   loop's fl(s + v) is the multiple of u nearest s + v, s + R(v), unless v is a tie (where the
//   even sum wins, which depends on s). So without ties the loop adds R(v), exactly.
// Each group of eight values is tested; a group that passes extends the current run, summed in
// vector accumulators; one that fails adds the run to s and runs the loop over its eight values.
// The block's result is the loop's when it is below 2B: a run whose exact sum reached 2B would
// have rounded (a sum of non-negative terms, in any order) to 2B or more, and no later addition
// lowers it. Otherwise the block runs again with a larger B, or the loop.
//   B is first s0's binade (right for every block whose result stays in it), then that of an
//   estimate of the result, s0 plus the block's sum in any order.
//   s is a multiple of u when s ≥ B (its spacing is at least u), or when (s + B) − B == s (the
//   sum, in [B, 2B), rounds s to a multiple of u); after a run, or the loop from s ≥ B, it is one.
//   Where L is below the fp32 normal range, u < 2^-149: every fp32 value is a multiple of u and
//   none is a tie; above it, L rounds to infinity and only infinities pass.
// Infinities and NaNs either fail the test or make the block's result fail its check, so that
// blocks holding them run the loop. A block of zeros (estimate 0) adds zero; a negative or NaN
// s0 runs the loop.
//
// add_abs_in_order_with_signs: the same sum, the sign bits written by the first runs over a block
// from the values they load (a block the runs never see, or its last n mod 8 elements, by a
// loop). The runs prefetch the elements kAheadBytes on, which the hardware prefetcher alone does
// not bring in time for a loop this dense: without, the sum of a 60 MB gradient took about three
// times a plain read of it on the 2-core machine, with it about 1.3 times.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "algorithms/codecs/simd.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CEDAR_ABS_SUM_AVX2 1
#include <immintrin.h>
#endif

namespace cedar {
namespace simd_impl {
namespace {

// The loop itself: blocks and groups that fail, and the last n mod 8 elements.
double add_abs_loop(double s, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) s += std::fabs(x[i]);
  return s;
}

// The sign bits of x[0, n), n <= 8, as one byte: bit k set for x_k >= 0 (clear for x_k < 0 and
// NaN), pack_signs's bits (bit_packing.h).
inline uint8_t sign_byte(const float* x, int64_t n) {
  uint32_t byte = 0;
  for (int64_t k = 0; k < n; ++k) byte |= static_cast<uint32_t>(x[k] >= 0) << k;
  return static_cast<uint8_t>(byte);
}

// The loop, writing the sign bits of x[0, n) to `signs` where it is given (n a multiple of 8).
double add_abs_loop(double s, const float* x, int64_t n, uint8_t* signs) {
  if (signs)
    for (int64_t j = 0; j < n / 8; ++j) signs[j] = sign_byte(x + 8 * j, 8);
  return add_abs_loop(s, x, n);
}

// How far ahead of the group being summed the runs prefetch: a few KB, so that the lines arrive
// before the loop reaches them and stay in L1 until it does.
constexpr uintptr_t kAheadBytes = 4096;
// The line kAheadBytes past x on its way into the cache: an address, never dereferenced (past the
// end of x the hint is dropped or fetches a line nobody reads).
inline void prefetch_ahead(const float* x) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(x) + kAheadBytes));
#endif
}

// Whether s is a multiple of the spacing b·2^-52 of fp64 values in [b, 2b).
inline bool multiple_of_spacing(double s, double b) { return s >= b || (s + b) - b == s; }

// Whether a block whose groups from 0 to the one at element i had `failed` failures should run
// the loop for the rest: a failure costs the loop's eight additions and a mispredicted branch, so
// that with more than one group in four failing the loop alone is faster.
inline bool give_up(int64_t failed, int64_t i) { return failed >= 8 && 4 * failed > i / 8; }

// 2^⌊log2 v⌋ for a finite positive v (v's exponent bits).
inline double binade(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  bits &= 0x7ff0000000000000u;
  std::memcpy(&v, &bits, 8);
  return v;
}

// One block from s0: runs(s0, b, L, m) over the groups of x[0, m), m = n − n mod 8, the loop over
// the rest; sum() is the block's sum in any order.
template <class Sum, class Runs>
double block(double s0, const float* x, int64_t n, Sum sum, Runs runs) {
  if (!(s0 >= 0)) return add_abs_loop(s0, x, n);
  const int64_t m = n - n % 8;
  auto attempt = [&](double b) {  // the result, or -1 where it is not below 2b
    const double s = add_abs_loop(runs(s0, b, static_cast<float>(b * 0x1.0p-29), m), x + m, n - m);
    return s < 2 * b ? s : -1.0;
  };
  if (s0 > 0 && std::isfinite(s0)) {
    const double s = attempt(binade(s0));
    if (s >= 0) return s;
  }
  const double e = s0 + sum();
  if (e == 0) return n ? s0 + 0.0 : s0;  // every value is ±0 (and s0 is)
  if (!std::isfinite(e)) return add_abs_loop(s0, x, n);
  const double s = attempt(binade(e));
  return s >= 0 ? s : add_abs_loop(s0, x, n);
}

// block() of x[0, n) writing the sign bits of its elements to `signs` (when given): the first
// call of runs(s, b, L, m, signs) over the groups writes theirs (later calls get nullptr), a loop
// those of a block that never reaches the runs and of the last n mod 8 elements.
template <class Sum, class Runs>
double block_with_signs(double s0, const float* x, int64_t n, uint8_t* signs, Sum sum, Runs runs) {
  uint8_t* unwritten = signs;
  const double s = block(s0, x, n, sum, [&](double s, double b, float l, int64_t m) {
    uint8_t* out = unwritten;
    unwritten = nullptr;
    return runs(s, b, l, m, out);
  });
  const int64_t m = n - n % 8;
  if (unwritten)
    for (int64_t j = 0; j < m / 8; ++j) signs[j] = sign_byte(x + 8 * j, 8);
  if (signs && m < n) signs[m / 8] = sign_byte(x + m, n - m);
  return s;
}

}  // namespace

double add_abs_in_order_portable(double s, const float* x, int64_t n) {
  return add_abs_loop(s, x, n);
}

double add_abs_in_order_with_signs_portable(double s, const float* x, int64_t n, uint8_t* signs) {
  const int64_t m = n - n % 8;
  if (m < n) signs[m / 8] = sign_byte(x + m, n - m);
  return add_abs_loop(add_abs_loop(s, x, m, signs), x + m, n - m);
}

#if defined(__SSE2__)
namespace {

// Σ of two accumulators' four lanes.
inline double lanes(__m128d a, __m128d c) {
  a = _mm_add_pd(a, c);
  return _mm_cvtsd_f64(_mm_add_sd(a, _mm_unpackhi_pd(a, a)));
}

// The groups of one block from s in rounded or exact runs, each run in two accumulators; with
// Signs, each group's sign bits to signs[i / 8].
template <bool Rounded, bool Signs>
double runs_sse2(const float* p, double s, double b, float low, int64_t m, uint8_t* signs) {
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff)), zero = _mm_setzero_ps();
  const __m128 l = _mm_set1_ps(low), half = _mm_set1_ps(static_cast<float>(low * 0x1.0p-24));
  // r = R(v); the lanes that fail: a tie (|R(v) − v| = u/2 below L) in rounded runs, R(v) != v in
  // exact runs.
  auto test = [&](__m128 v, __m128& r) {
    const __m128 ge = _mm_cmpge_ps(v, l), rounded = _mm_sub_ps(_mm_add_ps(v, l), l);
    r = _mm_or_ps(_mm_and_ps(ge, v), _mm_andnot_ps(ge, rounded));
    if constexpr (Rounded)
      return _mm_andnot_ps(ge, _mm_cmpeq_ps(_mm_and_ps(_mm_sub_ps(rounded, v), abs_mask), half));
    return _mm_cmpneq_ps(r, v);
  };
  bool s_ok = Rounded || multiple_of_spacing(s, b);
  int64_t failed = 0;
  __m128d a = _mm_setzero_pd(), c = _mm_setzero_pd();  // the run
  for (int64_t i = 0; i < m; i += 8) {
    prefetch_ahead(p + i);
    const __m128 x0 = _mm_loadu_ps(p + i), x1 = _mm_loadu_ps(p + i + 4);
    if constexpr (Signs)  // ordered x >= 0: false for NaN, true for -0, as pack_signs
      signs[i / 8] = static_cast<uint8_t>(_mm_movemask_ps(_mm_cmpge_ps(x0, zero)) |
                                          _mm_movemask_ps(_mm_cmpge_ps(x1, zero)) << 4);
    __m128 r0, r1;
    const __m128 bad0 = test(_mm_and_ps(x0, abs_mask), r0);
    const __m128 bad1 = test(_mm_and_ps(x1, abs_mask), r1);
    if (s_ok && _mm_movemask_ps(_mm_or_ps(bad0, bad1)) == 0) {
      a = _mm_add_pd(a, _mm_add_pd(_mm_cvtps_pd(r0), _mm_cvtps_pd(_mm_movehl_ps(r0, r0))));
      c = _mm_add_pd(c, _mm_add_pd(_mm_cvtps_pd(r1), _mm_cvtps_pd(_mm_movehl_ps(r1, r1))));
    } else {
      s = add_abs_loop(s + lanes(a, c), p + i, 8);
      a = c = _mm_setzero_pd();
      s_ok = Rounded || multiple_of_spacing(s, b);
      if (give_up(++failed, i))
        return add_abs_loop(s, p + i + 8, m - i - 8, Signs ? signs + i / 8 + 1 : nullptr);
    }
  }
  return s + lanes(a, c);
}

double sum_sse2(const float* p, int64_t n) {
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  __m128d a = _mm_setzero_pd(), c = _mm_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_and_ps(_mm_loadu_ps(p + i), abs_mask);
    a = _mm_add_pd(a, _mm_cvtps_pd(v));
    c = _mm_add_pd(c, _mm_cvtps_pd(_mm_movehl_ps(v, v)));
  }
  return add_abs_loop(lanes(a, c), p + i, n - i);
}

}  // namespace

double add_abs_in_order_with_signs_sse2(double s, const float* x, int64_t n, uint8_t* signs) {
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const float* p = x + c0;
    const int64_t len = std::min(kChunk, n - c0);
    s = block_with_signs(
        s, p, len, signs ? signs + c0 / 8 : nullptr, [p, len] { return sum_sse2(p, len); },
        [p](double s, double b, float l, int64_t m, uint8_t* out) {
          if (out)
            return s >= b ? runs_sse2<true, true>(p, s, b, l, m, out)
                          : runs_sse2<false, true>(p, s, b, l, m, out);
          return s >= b ? runs_sse2<true, false>(p, s, b, l, m, out)
                        : runs_sse2<false, false>(p, s, b, l, m, out);
        });
  }
  return s;
}
#else
double add_abs_in_order_with_signs_sse2(double s, const float* x, int64_t n, uint8_t* signs) {
  return signs ? add_abs_in_order_with_signs_portable(s, x, n, signs) : add_abs_loop(s, x, n);
}
#endif

#if defined(CEDAR_ABS_SUM_AVX2)
namespace {

// runs_sse2 and sum_sse2 with eight values per register (lambdas would not take the target).
__attribute__((target("avx2"))) inline double lanes_avx2(__m256d a, __m256d c) {
  a = _mm256_add_pd(a, c);
  __m128d h = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

template <bool Rounded, bool Signs>
__attribute__((target("avx2"))) double runs_avx2(const float* p, double s, double b, float low,
                                                 int64_t m, uint8_t* signs) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 l = _mm256_set1_ps(low), half = _mm256_set1_ps(static_cast<float>(low * 0x1.0p-24));
  bool s_ok = Rounded || multiple_of_spacing(s, b);
  int64_t failed = 0;
  __m256d a = _mm256_setzero_pd(), c = _mm256_setzero_pd();  // the run
  for (int64_t i = 0; i < m; i += 8) {
    prefetch_ahead(p + i);
    const __m256 x = _mm256_loadu_ps(p + i);
    if constexpr (Signs)  // ordered x >= 0, as above
      signs[i / 8] = static_cast<uint8_t>(
          _mm256_movemask_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ)));
    const __m256 v = _mm256_and_ps(x, abs_mask);
    const __m256 ge = _mm256_cmp_ps(v, l, _CMP_GE_OQ);
    const __m256 rounded = _mm256_sub_ps(_mm256_add_ps(v, l), l);
    const __m256 r = _mm256_blendv_ps(rounded, v, ge);
    // Rounded runs fail at a tie (|R(v) − v| = u/2 below L), exact runs wherever R(v) != v.
    const __m256 distance = _mm256_and_ps(_mm256_sub_ps(rounded, v), abs_mask);
    const __m256 tie = _mm256_andnot_ps(ge, _mm256_cmp_ps(distance, half, _CMP_EQ_OQ));
    const __m256 bad = Rounded ? tie : _mm256_cmp_ps(r, v, _CMP_NEQ_UQ);
    if (s_ok && _mm256_movemask_ps(bad) == 0) {
      a = _mm256_add_pd(a, _mm256_cvtps_pd(_mm256_castps256_ps128(r)));
      c = _mm256_add_pd(c, _mm256_cvtps_pd(_mm256_extractf128_ps(r, 1)));
    } else {
      s = add_abs_loop(s + lanes_avx2(a, c), p + i, 8);
      a = c = _mm256_setzero_pd();
      s_ok = Rounded || multiple_of_spacing(s, b);
      if (give_up(++failed, i))
        return add_abs_loop(s, p + i + 8, m - i - 8, Signs ? signs + i / 8 + 1 : nullptr);
    }
  }
  return s + lanes_avx2(a, c);
}

__attribute__((target("avx2"))) double sum_avx2(const float* p, int64_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256d a = _mm256_setzero_pd(), c = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_and_ps(_mm256_loadu_ps(p + i), abs_mask);
    a = _mm256_add_pd(a, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    c = _mm256_add_pd(c, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  return add_abs_loop(lanes_avx2(a, c), p + i, n - i);
}

}  // namespace

double add_abs_in_order_with_signs_avx2(double s, const float* x, int64_t n, uint8_t* signs) {
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const float* p = x + c0;
    const int64_t len = std::min(kChunk, n - c0);
    s = block_with_signs(
        s, p, len, signs ? signs + c0 / 8 : nullptr, [p, len] { return sum_avx2(p, len); },
        [p](double s, double b, float l, int64_t m, uint8_t* out) {
          if (out)
            return s >= b ? runs_avx2<true, true>(p, s, b, l, m, out)
                          : runs_avx2<false, true>(p, s, b, l, m, out);
          return s >= b ? runs_avx2<true, false>(p, s, b, l, m, out)
                        : runs_avx2<false, false>(p, s, b, l, m, out);
        });
  }
  return s;
}
#else
double add_abs_in_order_with_signs_avx2(double s, const float* x, int64_t n, uint8_t* signs) {
  return add_abs_in_order_with_signs_sse2(s, x, n, signs);
}
#endif

double add_abs_in_order_sse2(double s, const float* x, int64_t n) {
  return add_abs_in_order_with_signs_sse2(s, x, n, nullptr);
}

double add_abs_in_order_avx2(double s, const float* x, int64_t n) {
  return add_abs_in_order_with_signs_avx2(s, x, n, nullptr);
}

}  // namespace simd_impl

double add_abs_in_order(double s, const float* x, int64_t n) {
  return simd_impl::have_avx2() ? simd_impl::add_abs_in_order_avx2(s, x, n)
                                : simd_impl::add_abs_in_order_sse2(s, x, n);
}

double add_abs_in_order_with_signs(double s, const float* x, int64_t n, uint8_t* signs) {
  return simd_impl::have_avx2() ? simd_impl::add_abs_in_order_with_signs_avx2(s, x, n, signs)
                                : simd_impl::add_abs_in_order_with_signs_sse2(s, x, n, signs);
}

}  // namespace cedar
