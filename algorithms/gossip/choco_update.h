#pragma once
// CHOCO-SGD's update after its exchange (algorithms/choco_sgd.cpp) for one parameter tensor of n
// fp32 elements, in one pass over the decoded differences, the public copies and the model:
//   sum    = q_self + q[0] + ... + q[k−1]      (fp32 additions in that order)
//   hat    ← hat + q_self
//   mixed  ← mixed + w·sum
//   x      ← x + γ·(mixed − hat)
// which the LibTorch form writes as six operations and as many passes: sum = q_self.clone(),
// sum.add_(q[j]) for each j, hat.add_(q_self), mixed.add_(sum, w), d = mixed − hat, x.add_(d, γ).
// The two multiply-adds are rounded as LibTorch's add_(other, alpha) rounds self + alpha·other
// for fp32 CPU tensors on this machine (`rounding`, from libtorch_add_alpha()), with alpha
// rounded to fp32 as LibTorch rounds it; everything else is one fp32 operation per element. So
// the pass gives the LibTorch form's bits.
#include <cstdint>
#include <optional>

namespace cedar {

enum class MulAdd {
  kFused,     // self + alpha·other rounded once (a fused multiply-add)
  kSeparate,  // the product rounded, then the sum
};

// How LibTorch's add_(other, alpha) rounds on fp32 CPU tensors here: its AVX2 and AVX-512 kernels
// fuse the two, its baseline kernel does not. Found once per process by running add_ on probe
// values where the two roundings differ, at a length that also reaches its scalar loop; nullopt
// when neither matches every element (callers then keep the LibTorch form).
std::optional<MulAdd> libtorch_add_alpha();

// The decoded differences of one update: n fp32 values, or n sign bits (bit_packing.h's layout
// with b = 1) that decode to `one` (bit 1) and `zero` (bit 0), as the sign codecs' do
// (Compressor::sign_decoding).
struct Differences {
  const float* values = nullptr;
  const uint8_t* bits = nullptr;
  float one = 0, zero = 0;
};

// The update above, q_self and others[0, k) all of one kind (values or bits;
// std::invalid_argument otherwise). None of the outputs may overlap another array.
void choco_update(MulAdd rounding, const Differences& q_self, const Differences* others, int k,
                  float w, float gamma, float* hat, float* mixed, float* x, int64_t n);

// Its forms, for tests that compare them: `avx2` (AVX2 with FMA for the fused rounding, only
// where choco_update_avx2_supported(); the separate rounding takes the portable loop either way)
// or the portable loop.
bool choco_update_avx2_supported();
namespace simd_impl {
void choco_update(bool avx2, MulAdd rounding, const Differences& q_self, const Differences* others,
                  int k, float w, float gamma, float* hat, float* mixed, float* x, int64_t n);
}  // namespace simd_impl

}  // namespace cedar
