#pragma once
// TernGrad's codec (Wen et al. 2017; the rule and the exchange are in algorithms/terngrad.cpp): a
// layer's statistics, its 2-bit codes and their decoding.
//
// Codes of one tensor of n elements: n 2-bit codes packed by bit_packing.h (LSB first), starting on
// a byte boundary; 0 → 0, 1 → +s, 2 → −s (3 unused): ⌈n/4⌉ bytes. The scaler s is exchanged
// beside the codes (algorithms/terngrad.cpp).
// σ is the population standard deviation (divide by n), computed in double, as in the reference
// code, in one pass over g shifted by its first element K (exact for a constant g, no
// cancellation when the mean is far from 0): with d_i = g_i − K summed into eight partial sums
// (element i into sum i mod 8, added ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), simd.h) for Σd and Σd²,
// σ² = max(0, (Σd² − (Σd)²/n)/n).
// Randomness: per tensor key = draw_key(gen) (compressor.h), u_i = CounterUniforms(key) at element
// i (counter_rng.h) and b_i = (u_i·s < |clipped g_i|) in fp32.
#include <ATen/core/Generator.h>

#include <cstdint>
#include <limits>

#include "algorithms/codecs/simd.h"

namespace cedar {

struct TernaryStats {
  float clip = std::numeric_limits<float>::infinity();  // c·σ (infinity when clipping is off)
  float max_abs = 0;                                    // max |x_i|, NaNs skipped (0: none)
};

// One pass over x[0, n): max |x_i| and, when c > 0, the clipping threshold c·σ. `isa`: the
// kernels (simd.h; one that isa_supported(), each gives the same bits), here and below.
TernaryStats ternary_stats(const float* x, int64_t n, double c, Isa isa = best_isa());

// The 2-bit codes of x[0, n) clipped at t for scaler s (packed_bytes(n, 2) bytes at out), the
// uniforms keyed by one draw from `gen`.
void ternarize(const float* x, int64_t n, float s, float t, at::Generator& gen, uint8_t* out,
               Isa isa = best_isa());

// sum[k] (+)= value[code k] for the n 2-bit codes at `in` (first: sum[k] = 0 + value[code k]).
void add_ternary(const uint8_t* in, int64_t n, const float value[4], bool first, float* sum);

}  // namespace cedar
