#pragma once
// fp32 <-> IEEE binary16 (half) conversions of the fp16 codec, with the bits of x86's F16C
// instructions, which LibTorch's vectorised casts to and from at::kHalf execute on x86-64:
//   fp32 -> half: round to nearest, ties to even; magnitudes from 65520 up to ±inf; tiny values to
//     half subnormals or ±0, the sign kept; a NaN to the quiet NaN with its sign and the top nine
//     bits of its payload, sign | 0x7E00 | (fp32 mantissa >> 13).
//   half -> fp32: exact; a NaN quieted with its payload, sign | 0x7FC00000 | (half mantissa << 13).
// Halves are stored in host byte order, two bytes each, at any alignment. Where the CPU has F16C
// (checked once at run time) the conversions run on it, eight values per instruction; elsewhere
// portable code gives the same bits. Outputs larger than kStreamingBytes (simd.h) are written with
// non-temporal stores on the F16C path.
#include <cstdint>

namespace cedar {

// Writes the halves of in[0, n) to out[0, 2n).
void floats_to_halves(const float* in, int64_t n, uint8_t* out);
// Writes the fp32 values of the n halves at in[0, 2n) to out[0, n).
void halves_to_floats(const uint8_t* in, int64_t n, float* out);
// sum[i] <- (sum[i] + fp32 of half i) / divisor for i in [0, n) (divisor 1: the sum alone, no
// division): the bits of decoding into a buffer, adding and dividing, in one pass.
void add_halves_to_floats(const uint8_t* in, int64_t n, float* sum, float divisor);

// The two implementations behind the functions above, for tests that compare them.
namespace half_impl {
bool have_f16c();  // whether this CPU runs the F16C path
void floats_to_halves_portable(const float* in, int64_t n, uint8_t* out);
void halves_to_floats_portable(const uint8_t* in, int64_t n, float* out);
void add_halves_to_floats_portable(const uint8_t* in, int64_t n, float* sum, float divisor);
// Only where have_f16c().
void floats_to_halves_f16c(const float* in, int64_t n, uint8_t* out);
void halves_to_floats_f16c(const uint8_t* in, int64_t n, float* out);
void add_halves_to_floats_f16c(const uint8_t* in, int64_t n, float* sum, float divisor);
}  // namespace half_impl

}  // namespace cedar
