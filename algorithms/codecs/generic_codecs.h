#pragma once
// The codecs' device-generic forms: the encodings of qsgd_codec.h, terngrad_codec.h, the sign
// codecs (sign_codec.cpp) and fp16 (fp16_codec.cpp) written with LibTorch tensor ops alone, so that
// they run on whatever device holds the input (a CUDA gradient is encoded and decoded on its GPU,
// no copy to the host and back). Their bytes are the CPU kernels' bytes, bit for bit, given the
// same norms and scalers; the codecs take these forms for a tensor that is not on the CPU, and the
// tests run them on CPU tensors beside the kernels (tests/algorithms/generic_codecs_test.cpp).
//
// Reductions. QSGD's bucket norms follow the kernels' canonical order on every device: max-norms
// are order-free, and l2 norms are summed in the eight-partial-sum order of simd.h, one row of
// eight elements per bucket at a time (⌈B/8⌉ fp64 additions over all buckets at once), so their
// bits are the CPU's. TernGrad's σ and EF-signSGD's ‖p‖₁ are sums over a whole tensor in an order
// (eight partial sums, element order) that would take n/8 or n dependent steps on a device; their
// device forms here (ternary_clip, l1_scale) use LibTorch's fp64 sums, which may differ from the
// CPU's in the last fp64 place and then, rarely, in the fp32 value. The encoders therefore take
// the scalers as arguments: with the same scalers they write the same bytes. TernGrad's scaler
// max|x| is order-free and the same everywhere.
//
// Randomness: the uniforms and words of CounterUniforms (counter_rng.h), computed as its portable
// path does (AES rounds as byte-table look-ups and xors on int32 tensors), from its round keys.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/qsgd_codec.h"

namespace cedar::generic {

// w(key, first + k) for k in [0, n), as int64 values in [0, 2^32), on `device`.
at::Tensor counter_words(const CounterUniforms& rng, int64_t first, int64_t n, at::Device device);
// u(key, first + k) for k in [0, n), fp32 on `device`.
at::Tensor counter_uniforms(const CounterUniforms& rng, int64_t first, int64_t n,
                            at::Device device);

// The codes of a 1-D integer tensor (each in [0, 2^bits), bits in [1, 16]) packed as bit_packing.h
// packs them: a uint8 tensor of packed_bytes(n, bits) bytes on the codes' device.
at::Tensor pack_codes(const at::Tensor& codes, int bits);
// The n codes of `bytes` (packed_bytes(n, bits) uint8 bytes) as int32 on the bytes' device.
at::Tensor unpack_codes(const at::Tensor& bytes, int64_t n, int bits);

// QSGD: the buckets(n) norms of x (1-D contiguous fp32), fp32 on x's device, bit for bit those of
// qsgd_encode; the payload (norms, then codes) for those norms with the uniforms of `rng`; and the
// n values of a payload, fp32 on its device.
at::Tensor qsgd_norms(const QsgdFormat& f, const at::Tensor& x);
// The fp64 Σ x_i² of each bucket behind the l2 norms, bit for bit bucket_sums_of_squares (simd.h).
at::Tensor qsgd_sums_of_squares(const QsgdFormat& f, const at::Tensor& x);
at::Tensor qsgd_encode(const QsgdFormat& f, const at::Tensor& x, const at::Tensor& norms,
                       const CounterUniforms& rng);
at::Tensor qsgd_decode(const QsgdFormat& f, const at::Tensor& payload, int64_t n);

// TernGrad: max|x_i| (NaNs skipped) as ternary_stats computes it; c·σ by LibTorch's fp64 sums
// (see above; infinity when c <= 0); the 2-bit codes of x clipped at t for scaler s, as ternarize
// writes them for the same uniforms; and sum (+)= value[code] for n codes, as add_ternary computes
// it (first: sum = 0 + value[code]). Scalars come back as 0-dim fp32 tensors on x's device.
at::Tensor ternary_max_abs(const at::Tensor& x);
at::Tensor ternary_clip(const at::Tensor& x, double c);
at::Tensor ternarize(const at::Tensor& x, float s, float t, const CounterUniforms& rng);
void add_ternary(const at::Tensor& codes, int64_t n, const float value[4], bool first,
                 at::Tensor& sum);

// Sign bits (signSGD): bit 1 for x ≥ 0, 0 for x < 0 and NaN, packed as pack_signs packs them; and
// their decoding to `one` / `zero`.
at::Tensor pack_signs(const at::Tensor& x);
at::Tensor unpack_signs(const at::Tensor& bytes, int64_t n, float one, float zero);
// EF-signSGD: ‖p‖₁/d rounded to fp32 by LibTorch's fp64 sum (see above); the payload for a
// given scale; its decoding (bit·(2·scale) − scale).
float l1_scale(const at::Tensor& p);
at::Tensor scaled_sign_encode(const at::Tensor& p, float scale);
at::Tensor scaled_sign_decode(const at::Tensor& payload, int64_t n);

// fp16: the halves of x (round to nearest even) as 2n bytes, and their exact widening.
at::Tensor halves_encode(const at::Tensor& x);
at::Tensor halves_decode(const at::Tensor& payload, int64_t n);

// A payload's bytes as a tensor of `type` (whole elements, little-endian), copied to a fresh
// tensor when its offset does not allow a view.
at::Tensor reinterpret(const at::Tensor& bytes, at::ScalarType type);

}  // namespace cedar::generic
