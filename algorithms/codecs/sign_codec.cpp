// The sign codecs of signSGD (Bernstein et al. 2018) and EF-signSGD (Karimireddy et al. 2019).
//
// Sign, one tensor of n elements: n sign bits packed by bit_packing.h (LSB first), bit 1 for
// x ≥ 0 (+1) and 0 for x < 0 or NaN (−1): ⌈n/8⌉ bytes. One bit cannot carry sign(0) = 0, so an
// exact zero is sent as +1.
// Scaled sign, one tensor of d elements: [fp32 scale ‖p‖₁/d][d sign bits as above, 1 → +scale,
// 0 → −scale]: 4 + ⌈d/8⌉ bytes. ‖p‖₁ is summed in element order in fp64, then divided by d and
// rounded to fp32; a value decodes as bit·(2·scale) − scale in fp32.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/simd.h"

namespace cedar {
namespace {

// One bit per element: +1 for x >= 0, -1 for x < 0.
class SignCompressor final : public Compressor {
 public:
  int64_t payload_bytes(int64_t numel) const override { return packed_bytes(numel, 1); }

  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
    if (!v.is_cpu()) return generic::pack_signs(v);  // where it is (generic_codecs.h)
    at::Tensor out = at::empty({packed_bytes(v.numel(), 1)}, at::kByte);
    pack_signs(v.data_ptr<float>(), v.numel(), out.data_ptr<uint8_t>());
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    if (!payload.is_cpu()) return generic::unpack_signs(payload, numel, 1.0f, -1.0f);
    return unpack_signs(payload, numel, 1.0f, -1.0f);
  }

  void decompress_into(const at::Tensor& payload, at::Tensor& out) override {
    check_decode_target(out, "signsgd", true);
    if (!out.is_cpu()) {
      out.view({-1}).copy_(
          generic::unpack_signs(payload.to(out.device()), out.numel(), 1.0f, -1.0f));
      return;
    }
    unpack_signs(payload, out.numel(), 1.0f, -1.0f, out.data_ptr<float>());
  }
};

// Δ = (‖p‖₁/d)·sign(p): one fp32 scale and one bit per element.
class ScaledSignCompressor final : public Compressor {
 public:
  int64_t payload_bytes(int64_t numel) const override { return 4 + packed_bytes(numel, 1); }

  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    at::Tensor p = x.detach().to(at::kFloat).contiguous().reshape({-1});
    // Where it is: the same bytes for the same scale, the scale by LibTorch's fp64 sum
    // (generic_codecs.h).
    if (!p.is_cpu()) return generic::scaled_sign_encode(p, generic::l1_scale(p));
    const int64_t d = p.numel();
    const float* pp = p.data_ptr<float>();
    at::Tensor out = at::empty({payload_bytes(d)}, at::kByte);
    uint8_t* op = out.data_ptr<uint8_t>();
    // ‖p‖₁ in element order (fp64) and the sign bits, chunk by chunk while the chunk is cached
    // (every chunk's bits start on a byte).
    double l1 = 0;
    for (int64_t c0 = 0; c0 < d; c0 += kChunk) {
      const int64_t len = std::min(kChunk, d - c0);
      l1 = add_abs_in_order(l1, pp + c0, len);
      pack_signs(pp + c0, len, op + 4 + c0 / 8);
    }
    const float scale = d ? static_cast<float>(l1 / static_cast<double>(d)) : 0.0f;
    std::memcpy(op, &scale, 4);
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    if (!payload.is_cpu()) return generic::scaled_sign_decode(payload, numel);
    at::Tensor out = at::empty({std::max<int64_t>(numel, 0)}, at::kFloat);
    decode(payload, numel, out.data_ptr<float>());
    return out;
  }

  void decompress_into(const at::Tensor& payload, at::Tensor& out) override {
    check_decode_target(out, "ef-signsgd", true);
    if (!out.is_cpu()) {
      out.view({-1}).copy_(generic::scaled_sign_decode(payload.to(out.device()), out.numel()));
      return;
    }
    decode(payload, out.numel(), out.data_ptr<float>());
  }

 private:
  void decode(const at::Tensor& payload, int64_t numel, float* out) {
    // A peer's bytes: the size is checked before the scale is read from them.
    if (numel < 0)
      throw std::invalid_argument("ef-signsgd: negative element count " + std::to_string(numel));
    if (payload.scalar_type() != at::kByte || payload.dim() != 1)
      throw std::invalid_argument("ef-signsgd: expected a 1-D uint8 payload, got " +
                                  std::to_string(payload.dim()) + "-D " +
                                  c10::toString(payload.scalar_type()));
    if (payload.numel() != payload_bytes(numel))
      throw std::invalid_argument("ef-signsgd: a payload of " + std::to_string(payload.numel()) +
                                  " bytes for " + std::to_string(numel) + " elements (expected " +
                                  std::to_string(payload_bytes(numel)) + ": a 4-byte scale and " +
                                  std::to_string(packed_bytes(numel, 1)) + " bytes of sign bits)");
    at::Tensor in = payload.contiguous().cpu();
    float scale = 0;
    std::memcpy(&scale, in.data_ptr<uint8_t>(), 4);
    // The values of bit * (2·scale) − scale in fp32, as the tensor expression computes them.
    const float twice = 2 * scale;
    const float one = 1.0f * twice - scale, zero = 0.0f * twice - scale;
    unpack_signs_into(in.data_ptr<uint8_t>() + 4, numel, one, zero, out);
  }
};

}  // namespace

std::unique_ptr<Compressor> make_sign_compressor() { return std::make_unique<SignCompressor>(); }

std::unique_ptr<Compressor> make_scaled_sign_compressor() {
  return std::make_unique<ScaledSignCompressor>();
}

}  // namespace cedar
