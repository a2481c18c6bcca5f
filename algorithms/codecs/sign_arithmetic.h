#pragma once
// Arithmetic straight on packed sign bits (bit_packing.h's layout with b = 1: bit i is bit
// i mod 8 of byte i / 8), for the sign codecs' decoders that never need the decoded tensor itself:
// error feedback's subtraction, an averaging exchange's sum and signSGD's majority vote. Each gives
// the bits of decoding into a buffer (bit 1 -> `one`, bit 0 -> `zero`) followed by the fp32
// operation, in one pass and without the buffer. Each comes in two forms with the same bits: the
// portable loops, and AVX2 where simd_impl::have_avx2() (simd.h), which the functions below choose.
#include <cstdint>

namespace cedar {

// x[i] <- x[i] - (bit i ? one : zero) for i in [0, n).
void subtract_signs(const uint8_t* bits, int64_t n, float one, float zero, float* x);
// sum[i] <- (sum[i] + (bit i ? one : zero)) / divisor for i in [0, n) (divisor 1: no division).
void add_signs(const uint8_t* bits, int64_t n, float one, float zero, float* sum, float divisor);
// out[i] <- (((v_0[i] + v_1[i] + ... + v_{S-1}[i]) / divisor) / then), v_s[i] = bit i of stream
// s ? one[s] : zero[s], summed in stream order, each division skipped when its divisor is 1 (x / 1
// is x). The bits of decoding stream 0 into out, add_signs of the others (divisor at the last)
// and dividing by `then`, in one pass over out block by block. streams >= 1.
void average_signs(const uint8_t* const* bits, const float* one, const float* zero, int streams,
                   int64_t n, float divisor, float then, float* out);
// out[i] <- sign of the sum over the `streams` bit streams of (bit ? +1 : -1): +1, -1, or +0 on a
// tie, the bits of summing the decoded ±1 values in fp32 (exact: integers) and taking the sign.
// Every stream holds n bits; `streams` is 1 to kMaxSignStreams (std::invalid_argument otherwise).
constexpr int kMaxSignStreams = 65535;
void majority_of_signs(const uint8_t* const* bits, int streams, int64_t n, float* out);

// The functions above in a chosen form, for tests that compare them: `avx2` (only where
// simd_impl::have_avx2()) or the portable loops.
namespace simd_impl {
void subtract_signs(bool avx2, const uint8_t* bits, int64_t n, float one, float zero, float* x);
void add_signs(bool avx2, const uint8_t* bits, int64_t n, float one, float zero, float* sum,
               float divisor);
void average_signs(bool avx2, const uint8_t* const* bits, const float* one, const float* zero,
                   int streams, int64_t n, float divisor, float then, float* out);
void majority_of_signs(bool avx2, const uint8_t* const* bits, int streams, int64_t n, float* out);
}  // namespace simd_impl

}  // namespace cedar
