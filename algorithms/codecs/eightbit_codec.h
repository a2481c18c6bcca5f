#pragma once
// 8-bit quantization as GRACE implements it (Xu et al., ICDCS 2021: its `u8bit` compressor, after
// Dettmers, "8-Bit Approximations for Parallelism in Deep Learning", ICLR 2016,
// arXiv:1511.04561). Not an IEEE-style 8-bit float: each value is its sign and one of 127 fixed
// magnitudes in (0, 1) times the tensor's largest magnitude.
//
// The magnitudes, ascending, index 1 .. 127 (index 0 is zero): Dettmers's dynamic data type, where
// leading zero bits select a decade and the bits after an indicator bit a point in it, as GRACE's
// table holds it. Decade 10^−k, k = 5, 4, .., 0, has 2·2^(5−k) points: the midpoints of 2^(5−k)
// equal steps over [0.1, 0.45]·10^−k and of 2^(5−k) equal steps over [0.45, 1]·10^−k (the first
// bit of the tree splits the decade at 0.45); then (m_126 + 1)/2 = 0.995703125. 2 + 4 + .. + 64
// = 126 points, plus that one: 127. Evaluated in fp64 and rounded once to fp32; GRACE's fp32
// constants agree to within 2 ulps.
//
// Encoding of x[0, n): s = max |x_i| (a NaN gives s = the canonical quiet NaN); for each x_i, r =
// |x_i| / s in fp32 and the index of the largest magnitude m_j <= r (0 where r < m_1 or r is NaN),
// GRACE's rounding (toward zero: the bin's lower edge). GRACE leaves r above m_127 (the largest
// value itself, r = 1) outside its bins; here it takes index 127. Wire format of one tensor: [fp32
// s][n bytes, byte i = j_i | sign(x_i) << 7]: 4 + n bytes. Every payload of that size is valid:
// byte b decodes to ±(m_{b & 127}·s) in fp32, m_0 = 0, negated where b >= 128, so zeros keep their
// sign; a non-finite s (a NaN or an infinity in x) decodes to NaN everywhere, so it is not hidden.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace cedar {

constexpr int kEightBitLevels = 128;

// m_0 = 0, then the 127 magnitudes above.
const float* eightbit_magnitudes();

inline int64_t eightbit_payload_bytes(int64_t n) { return 4 + n; }

// The payload of x[0, n) into out[0, 4 + n).
void eightbit_encode(const float* x, int64_t n, uint8_t* out);
// The n values of the payload at `in`.
void eightbit_decode(const uint8_t* in, int64_t n, float* out);

namespace generic {
// The same as tensor ops on x's device (1-D contiguous fp32): the bytes eightbit_encode writes.
at::Tensor eightbit_encode(const at::Tensor& x);
// The n values of a payload (checked size), fp32 on its device.
at::Tensor eightbit_decode(const at::Tensor& payload, int64_t n);
}  // namespace generic

}  // namespace cedar
