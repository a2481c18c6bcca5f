#pragma once
// The 1-bit quantizer of 1-bit SGD (Seide, Fu, Droppo, Li, Yu, "1-Bit Stochastic Gradient Descent
// and its Application to Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014):
// each value becomes one bit, split at 0, and decodes to the mean of its side, the two values
// that minimise the squared error of a two-level reconstruction split at 0.
//
// Sides of one tensor of n values: bit 1 for x >= 0 (−0 included), bit 0 for x < 0 and NaN (as
// the sign codecs' bits, bit_packing.h's pack_signs). Each side's mean is its fp64 sum in
// element order over its count, rounded to fp32; an empty side's mean is 0 (no bit decodes to
// it). A NaN or an infinity makes its side's mean non-finite, so it is not hidden.
//
// Wire format of one tensor: [fp32 mean of side 0][fp32 mean of side 1][n bits, packed LSB first
// by pack_signs]: 8 + ⌈n/8⌉ bytes. Every payload of that size is valid; bit i decodes to its
// side's mean.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace cedar {

// The values bits 0 and 1 decode to.
struct OneBitMeans {
  float zero = 0;
  float one = 0;
};

inline int64_t onebit_payload_bytes(int64_t n) { return 8 + (n + 7) / 8; }

// The means of x[0, n), by the rule above.
OneBitMeans onebit_means(const float* x, int64_t n);

namespace generic {
// The same as tensor ops on x's device (1-D contiguous fp32), by LibTorch's fp64 sums: their order
// differs from the kernel's, so a mean may differ from onebit_means' in its last bit.
OneBitMeans onebit_means(const at::Tensor& x);
// The payload of x for the given means, on x's device: the kernel's bytes for the same means.
at::Tensor onebit_encode(const at::Tensor& x, OneBitMeans means);
// The n values of a payload (checked size), fp32 on its device.
at::Tensor onebit_decode(const at::Tensor& payload, int64_t n);
}  // namespace generic

}  // namespace cedar
