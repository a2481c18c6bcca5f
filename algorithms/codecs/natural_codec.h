#pragma once
// Natural compression, C_nat (Horváth, Ho, Horváth, Sahu, Canini, Richtárik, "Natural Compression
// for Distributed Deep Learning", arXiv:1905.10988, 2019): every fp32 value rounded stochastically
// to one of the two powers of two around it, sent as its sign and 8-bit exponent.
//
// Rule, for x with IEEE fields sign s, biased exponent e and 23-bit mantissa m:
//   e in 1..254: x = ±a·(1 + m/2^23) with a = 2^(e−127), between the powers of two a and 2a;
//                C(x) = ±2a with probability (|x| − a)/a = m/2^23, else ±a.
//   e = 0 (zero and subnormals): |x| = m·2^−149 lies between 0 and 2^−126; C(x) = ±2^−126 with
//                probability m/2^23 = |x|/2^−126, else ±0.
//   Both cases are the one bit rule e' = e + [w < m], the mantissa dropped, with w uniform on
//   [0, 2^23): E[C(x)] = x exactly. A power of two and a zero (m = 0) are kept as they are, sign
//   included. The top binade (e = 254) rounds up to e' = 255, ±infinity: 2^128 is beyond fp32.
//   e = 255 (infinities and NaNs) is sent as e' = 255, ±infinity: nine bits have no room for a
//   NaN, and a non-finite value stays non-finite.
//
// Wire format of one tensor of n values: n 9-bit codes, code = e' | s << 8, packed by
// bit_packing.h (LSB first; code i in stream bits [9i, 9i + 9)): ⌈9n/8⌉ bytes, nothing else.
// Every code is valid; it decodes to the fp32 with bits s << 31 | e' << 23 (a zero mantissa).
//
// Randomness: w_i is the low 23 bits of the counter-based word w(key, i) (counter_rng.h), the key
// drawn from the encoder's generator once per tensor: the same bits on every device.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "algorithms/codecs/counter_rng.h"

namespace cedar {

constexpr int kNaturalBits = 9;

// The codes of x[0, n) for the words of `rng`, packed into out[0, ⌈9n/8⌉).
void natural_encode(const float* x, int64_t n, const CounterUniforms& rng, uint8_t* out);
// The n values of the packed codes at `in`.
void natural_decode(const uint8_t* in, int64_t n, float* out);

namespace generic {
// The same as tensor ops on x's device (1-D contiguous fp32): the bytes natural_encode writes.
at::Tensor natural_encode(const at::Tensor& x, const CounterUniforms& rng);
// The n values of a payload (checked size), fp32 on its device.
at::Tensor natural_decode(const at::Tensor& payload, int64_t n);
}  // namespace generic

}  // namespace cedar
