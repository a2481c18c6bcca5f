#pragma once
// The AVX2 kernels of simd.h's reductions (simd_avx2.cpp): a translation unit compiled for AVX2
// with AES and VAES, called only where isa_supported() (simd.h) says the CPU runs it. Each kernel
// gives, bit for bit, what the loops it stands in for give, and leaves the rest of its range (a
// ragged end) to those loops: it returns the count it did.
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

// simd.h's bucket_sums_of_squares (all of it), several buckets' sums interleaved.
void bucket_sums_of_squares_avx2(const float* x, int64_t n, int64_t bucket, int64_t first,
                                 int64_t last, double* sums);

}  // namespace cedar
