#pragma once
// The AVX2 kernels of simd.h's reductions (simd_avx2.cpp) and of the quantizers (qsgd_avx2.cpp,
// terngrad_avx2.cpp): translation units compiled for AVX2 with AES and VAES, called only where
// isa_supported() (simd.h) says the CPU runs them. Each gives, bit for bit, what the loops it
// stands in for give, and leaves the rest of its range (a ragged end, the last bytes of a stream)
// to those loops: it returns the count it did.
//
// `vaes`: the uniforms' AES rounds 256 bits per instruction (VAES) rather than 128 (AES-NI).
// `keys`: CounterUniforms::round_keys() of the uniforms (counter_rng.h), drawn in registers for
// the elements coded instead of through a buffer.
#include <cstdint>

namespace cedar {

// Whether the build has the kernels (x86-64 with GCC or Clang); when not, they are never called.
bool avx2_kernels_built();

// The eight-partial-sum reductions of simd.h over the first whole groups of eight of x[0, n):
// partial sums of d_i² into s2 (d_i = x_i, or x_i − k when `shifted`, then also Σd into s1 and
// the running maxima of |x_i| into mx). Every array starts at zero. Returns the count done.
int64_t partial_sums_avx2(bool shifted, const float* x, int64_t n, double k, double s1[8],
                          double s2[8], float mx[8]);

// max |x_i| over the first whole groups of eight of x[0, n) into the running maxima mx[8] (NaNs
// skipped). Returns the count done.
int64_t max_abs_avx2(const float* x, int64_t n, float mx[8]);

// simd.h's bucket_sums_of_squares (all of it).
void bucket_sums_of_squares_avx2(const float* x, int64_t n, int64_t bucket, int64_t first,
                                 int64_t last, double* sums);

// The B-bit codes (B <= 8) of elements [lo, lo + count) of one bucket at `x` (x[0] is element lo,
// a multiple of 8), level and sign at the bucket's scale as qsgd_encode.cpp computes them, packed
// straight into the stream at `out` (its byte lo / 8 · B); no store passes `end`, the end of the
// stream. Returns the count done, a multiple of 8.
int64_t qsgd_quantize_avx2(int B, bool vaes, const float* x, int64_t lo, int64_t count, float scale,
                           float s, const uint8_t* keys, uint8_t* out, const uint8_t* end);

// The values of `count` B-bit codes (B <= 8) of one bucket at `in` (starting on a byte), level ·
// unit with the code's sign bit, into out[0, count); no load passes `end`, the end of the stream.
// `stream`: non-temporal stores where `out` is 16-byte aligned (the caller fences). Returns the
// count done, a multiple of 8.
int64_t qsgd_dequantize_avx2(int B, const uint8_t* in, const uint8_t* end, int64_t count,
                             float unit, bool stream, float* out);

// TernGrad's 2-bit codes of x[0, n) (x[0] is element 0 of the tensor) for scaler s and clipping
// threshold t, as terngrad_codec.cpp computes them, into out[0, done / 4). Returns the count done,
// a multiple of 32.
int64_t ternarize_avx2(bool vaes, const float* x, int64_t n, float s, float t, const uint8_t* keys,
                       uint8_t* out);

}  // namespace cedar
