#pragma once
// What the codecs share below their own kernels: the instruction sets their kernels come in, the
// chunk they step by, the fixed-order sums and maxima their norms and statistics are made of, and
// the streamed output of the decoders. SSE2 where the build has it (every x86-64 build); the
// scalar loops give the same bits elsewhere, and the AVX2 kernels (avx2_kernels.h) where the CPU
// has AVX2.
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cedar {

// The kernels the quantizers (QSGD, TernGrad) and these reductions run: kBaseline, the loops of
// their own files (SSE2 on x86-64); kAvx2, AVX2 kernels whose uniforms take AES-NI's 128-bit
// rounds; kAvx2Vaes, the same with VAES's 256-bit rounds. Every one gives the same bits. The codecs
// use best_isa() unless told otherwise (the tests compare them).
enum class Isa { kBaseline, kAvx2, kAvx2Vaes };
// Whether this build and CPU run `isa`'s kernels (AVX2 and AES; VAES for kAvx2Vaes).
bool isa_supported(Isa isa);
// The widest supported.
Isa best_isa();

// Elements per step of the encoders and decoders: their uniforms and codes stay in the L1/L2
// caches between the passes over them. A multiple of 8, so that every chunk of 1-, 2- or b-bit
// codes starts on a byte.
constexpr int64_t kChunk = 4096;

namespace simd_impl {
// Whether this CPU has AVX2 (checked once): kernels with an AVX2 form, compiled for it alone,
// take that form then, with the same bits as their baseline form.
bool have_avx2();
}  // namespace simd_impl

// The eight-partial-sum order of the codecs' fp64 sums: element i of a range goes into partial sum
// i mod 8, and the sums are added as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)). The eight chains of
// additions overlap and vectorize; the order is part of the codecs' documented results.
inline double add_partial_sums(const double s[8]) {
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// Σ x_i² over x[0, n) in fp64, in the eight-partial-sum order (QSGD's l2 norm, squared).
double sum_of_squares(const float* x, int64_t n, Isa isa = best_isa());

// Σ x_i² of each bucket b in [first, last) of x[0, n) (buckets of `bucket` elements, the last one
// possibly shorter) into sums[0, last − first), each as sum_of_squares computes it (QSGD's l2
// norms, squared), bucket after bucket in one loop.
void bucket_sums_of_squares(const float* x, int64_t n, int64_t bucket, int64_t first, int64_t last,
                            double* sums, Isa isa = best_isa());

// s + |x_0| + |x_1| + ... + |x_{n-1}| in fp64, each |x_i| widened exactly and added one at a time
// in element order: the plain loop's result, bit for bit (EF-signSGD's ‖p‖₁). The loop's chain of
// n dependent additions is summed in vector registers, eight elements at a time, wherever what
// each addition adds (the value, or the value rounded to the spacing of the sums) is known in
// advance (abs_sum.cpp); elsewhere the loop runs.
double add_abs_in_order(double s, const float* x, int64_t n);
// The same sum, writing on the way the sign bits of x[0, n) to signs[0, ⌈n/8⌉): pack_signs's
// bits (bit_packing.h: bit i of byte i/8 set for x_i >= 0, clear for x_i < 0 and NaN, the last
// byte's unused bits clear). EF-signSGD's ‖p‖₁ and sign(p) in one read of p.
double add_abs_in_order_with_signs(double s, const float* x, int64_t n, uint8_t* signs);
// Their forms, for tests that compare them: the loop, SSE2 groups (the loop where the build has no
// SSE2) and AVX2 groups, which only run where simd_impl::have_avx2(). `signs` may be null in the
// last two (no bits written).
namespace simd_impl {
double add_abs_in_order_portable(double s, const float* x, int64_t n);
double add_abs_in_order_sse2(double s, const float* x, int64_t n);
double add_abs_in_order_avx2(double s, const float* x, int64_t n);
double add_abs_in_order_with_signs_portable(double s, const float* x, int64_t n, uint8_t* signs);
double add_abs_in_order_with_signs_sse2(double s, const float* x, int64_t n, uint8_t* signs);
double add_abs_in_order_with_signs_avx2(double s, const float* x, int64_t n, uint8_t* signs);
}  // namespace simd_impl

// Σ (x_i − y_i)² over x[0, n), y[0, n) in fp64, each difference rounded to fp32 (as x − y of two
// fp32 tensors) and squared exactly, in the eight-partial-sum order (LAG's gradient changes and
// parameter moves). The second form also copies x to y as it goes (y_i = x_i afterwards).
double squared_distance(const float* x, const float* y, int64_t n);
double squared_distance_then_copy(const float* x, float* y, int64_t n);
// The same sum, writing on the way diff_i = x_i − y_i (the fp32 difference it squares) and
// copy_i = x_i (LAG's trigger and upload in one pass). diff and copy may not overlap x or y.
double squared_distance_with_difference(const float* x, const float* y, float* diff, float* copy,
                                        int64_t n);
// The same sum, writing on the way diff_i = x_i − y_i and then x_i = y_i (PowerSGD's error
// e = M − P Qᵀ and M ← P Qᵀ in one pass). diff may not overlap x or y.
double squared_distance_then_take(float* x, const float* y, float* diff, int64_t n);
// Their forms, for tests that compare them (`copy`: the second): SSE2 (plain C++ without it), and
// AVX2, which only runs where simd_impl::have_avx2().
namespace simd_impl {
double squared_distance_sse2(const float* x, float* y, int64_t n, bool copy);
double squared_distance_avx2(const float* x, float* y, int64_t n, bool copy);
double squared_distance_with_difference_sse2(const float* x, const float* y, float* diff,
                                             float* copy, int64_t n);
double squared_distance_with_difference_avx2(const float* x, const float* y, float* diff,
                                             float* copy, int64_t n);
double squared_distance_then_take_sse2(float* x, const float* y, float* diff, int64_t n);
double squared_distance_then_take_avx2(float* x, const float* y, float* diff, int64_t n);
}  // namespace simd_impl

// e_i <- e_i + g_i·scale for i in [0, n): the fp32 product rounded, then the sum (no fused
// multiply-add; scale 1 adds g_i itself, as e + g). Error feedback's p = e + γ·g.
void accumulate_scaled(float* e, const float* g, int64_t n, float scale);

// max |x_i| over x[0, n), NaNs skipped (0 when there is none). Eight running maxima; the result
// does not depend on the order.
float max_abs(const float* x, int64_t n, Isa isa = best_isa());

// One pass over x[0, n) for a standard deviation without cancellation: with d_i = x_i − k in fp64,
// Σd and Σd² in the eight-partial-sum order, and max |x_i| (TernGrad's clipping and scaler).
struct ShiftedSums {
  double sum = 0;     // Σ d_i
  double sum_sq = 0;  // Σ d_i²
  float max_abs = 0;  // max |x_i|, NaNs skipped
};
ShiftedSums shifted_sums(const float* x, int64_t n, double k, Isa isa = best_isa());

// Decoders write their fp32 output through these: a plain copy, or for outputs larger than
// kStreamingBytes non-temporal stores, which skip reading every destination line into the cache
// first (output that large does not stay cached anyway). The values are the same either way.
constexpr int64_t kStreamingBytes = int64_t{8} << 20;
inline bool stream_output(int64_t n) { return n * 4 > kStreamingBytes; }
// Whether the build has non-temporal stores (stream4); without them nothing is streamed.
#if defined(__SSE2__)
constexpr bool kStreamingStores = true;
#else
constexpr bool kStreamingStores = false;
#endif
// Copies src[0, n) to dst; `stream`: non-temporal stores where dst is 16-byte aligned (call
// store_fence() once after the last streamed copy).
void store_floats(float* dst, const float* src, int64_t n, bool stream);
// Four floats from `src` to `dst`, both 16-byte aligned, by one non-temporal store (with
// kStreamingStores; a plain copy otherwise).
inline void stream4(float* dst, const float* src) {
#if defined(__SSE2__)
  _mm_stream_ps(dst, _mm_load_ps(src));
#else
  std::memcpy(dst, src, 16);
#endif
}
// Orders the streamed stores before every later store.
inline void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace cedar
