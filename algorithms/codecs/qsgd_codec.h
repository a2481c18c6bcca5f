#pragma once
// The QSGD codec (Alistarh et al. 2017; the rule is in algorithms/qsgd.cpp): the encoder
// (qsgd_encode.cpp) and the decoder (qsgd_decode.cpp) of one tensor's encoding, behind
// make_qsgd_compressor (codecs.h).
//
// Encoding of one tensor of n elements, B = bucket_size, m = ⌈n/B⌉ buckets, s = 2^bits − 1:
//   bytes [0, 4m)   m fp32 norms (host byte order, little-endian on every supported platform);
//   then            n codes of bits+1 bits packed by bit_packing.h (LSB-first stream),
//                   code = level | (negative << bits), level in [0, s]; negative is set only when
//                   level > 0 (a zero has no sign).
//   size = 4·⌈n/B⌉ + ⌈n·(bits+1)/8⌉ bytes.
// Norms: max by |v_i|; l2 as the square root of Σ v_i² in fp64, accumulated in eight partial
// sums (element i of the bucket into sum i mod 8), added as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)),
// then rounded to fp32 (simd.h).
// Randomness: per tensor, key = draw_key(gen) (compressor.h) and u_i = CounterUniforms(key) at
// element i (counter_rng.h), level = l + (u_i < a_i − l) with a_i = |v_i|·(s/‖v‖) in fp32.
// Decoding: level·(‖v‖/s) in fp32 with the code's sign bit as the value's sign bit.
#include <cstdint>

#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/simd.h"

namespace cedar {

// The parameters of one QSGD encoding.
struct QsgdFormat {
  int bits = 4;           // bits per level: s = 2^bits − 1 levels, codes of bits + 1 bits
  int64_t bucket = 512;   // elements that share one norm
  bool max_norm = false;  // ‖v‖∞ instead of ‖v‖₂

  // ⌈n/B⌉ without forming n + B - 1, which overflows for a bucket_size near 2^63.
  int64_t buckets(int64_t n) const { return n > 0 ? (n - 1) / bucket + 1 : 0; }
};

// The buckets(n) norms of x[0, n) into `norms` and the n codes into `codes`
// (packed_bytes(n, bits + 1) bytes), with the uniforms of `rng`, by the kernels of `isa` (one that
// isa_supported(); each writes the same bytes).
void qsgd_encode(const QsgdFormat& f, const float* x, int64_t n, const CounterUniforms& rng,
                 float* norms, uint8_t* codes, Isa isa = best_isa());

// The n values of the codes at `codes` with the bucket norms `norms` into out[0, n), by the
// kernels of `isa` (the same values by each).
void qsgd_decode(const QsgdFormat& f, const uint8_t* codes, int64_t n, const float* norms,
                 float* out, Isa isa = best_isa());

}  // namespace cedar
