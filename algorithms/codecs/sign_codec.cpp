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
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/sign_arithmetic.h"
#include "algorithms/codecs/simd.h"
#include "algorithms/codecs/two_level_sign_compressor.h"

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

  std::optional<SignDecoding> sign_decoding(const at::Tensor& payload,
                                            int64_t numel) const override {
    check_payload(payload, numel);
    SignDecoding d{payload.contiguous().cpu(), nullptr, 1.0f, -1.0f};
    d.bits = d.held.data_ptr<uint8_t>();
    return d;
  }

  // Counts each element's 1 bits over the payloads, without decoding any of them.
  bool majority_into(const std::vector<at::Tensor>& payloads, at::Tensor& out) override {
    check_decode_target(out, "signsgd", true);
    const auto streams = static_cast<int64_t>(payloads.size());
    if (!out.is_cpu() || streams < 1 || streams > kMaxSignStreams) return false;
    std::vector<at::Tensor> held;
    std::vector<const uint8_t*> bits;
    for (const at::Tensor& p : payloads) {
      check_payload(p, out.numel());
      held.push_back(p.contiguous().cpu());
      bits.push_back(held.back().data_ptr<uint8_t>());
    }
    majority_of_signs(bits.data(), static_cast<int>(streams), out.numel(), out.data_ptr<float>());
    return true;
  }

 private:
  // A peer's bytes are untrusted: exactly packed_bytes(n, 1) of them.
  void check_payload(const at::Tensor& payload, int64_t numel) const {
    check_payload_size(payload, "signsgd", numel, payload_bytes(numel), "one bit per element");
  }
};

// Δ = (‖p‖₁/d)·sign(p): one fp32 scale and one bit per element.
class ScaledSignCompressor final : public TwoLevelSignCompressor {
 public:
  ScaledSignCompressor() : TwoLevelSignCompressor("ef-signsgd") {}

  int64_t payload_bytes(int64_t numel) const override { return 4 + packed_bytes(numel, 1); }

  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    at::Tensor p = x.detach().to(at::kFloat).contiguous().reshape({-1});
    // Where it is: the same bytes for the same scale, the scale by LibTorch's fp64 sum
    // (generic_codecs.h).
    if (!p.is_cpu()) return generic::scaled_sign_encode(p, generic::l1_scale(p));
    const float* pp = p.data_ptr<float>();
    return encode(p.numel(), [pp](int64_t c0, int64_t) { return pp + c0; });
  }

  // x − y formed chunk by chunk where the encoder reads it, never stored whole.
  at::Tensor compress_difference(const at::Tensor& x, const at::Tensor& y, at::Generator& gen,
                                 at::Tensor& scratch) override {
    if (!cpu_fp32(x, y)) return Compressor::compress_difference(x, y, gen, scratch);
    const float* xp = x.data_ptr<float>();
    const float* yp = y.data_ptr<float>();
    float chunk[kChunk];
    return encode(x.numel(), [&](int64_t c0, int64_t len) {
      for (int64_t i = 0; i < len; ++i) chunk[i] = xp[c0 + i] - yp[c0 + i];
      return static_cast<const float*>(chunk);
    });
  }

  // e + g·scale formed chunk by chunk into e, each chunk encoded while it is cached.
  at::Tensor compress_accumulated(at::Tensor& e, const at::Tensor& g, float scale,
                                  at::Generator&) override {
    if (!cpu_fp32(e, g)) return {};
    float* ep = e.data_ptr<float>();
    const float* gp = g.data_ptr<float>();
    return encode(e.numel(), [ep, gp, scale](int64_t c0, int64_t len) {
      accumulate_scaled(ep + c0, gp + c0, len, scale);
      return static_cast<const float*>(ep + c0);
    });
  }

 private:
  // The encoding of d values, chunk(c0, len) giving those of [c0, c0 + len): ‖p‖₁ in element
  // order (fp64) and the sign bits in one read of each chunk (every chunk's bits start on a byte).
  template <class Chunk>
  at::Tensor encode(int64_t d, Chunk chunk) const {
    at::Tensor out = at::empty({payload_bytes(d)}, at::kByte);
    uint8_t* op = out.data_ptr<uint8_t>();
    double l1 = 0;
    for (int64_t c0 = 0; c0 < d; c0 += kChunk) {
      const int64_t len = std::min(kChunk, d - c0);
      l1 = add_abs_in_order_with_signs(l1, chunk(c0, len), len, op + 4 + c0 / 8);
    }
    const float scale = d ? static_cast<float>(l1 / static_cast<double>(d)) : 0.0f;
    std::memcpy(op, &scale, 4);
    return out;
  }

 protected:
  at::Tensor decode_where_it_is(const at::Tensor& payload, int64_t numel) const override {
    return generic::scaled_sign_decode(payload, numel);
  }

  SignDecoding checked_decoding(const at::Tensor& payload, int64_t numel) const override {
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
    SignDecoding d;
    d.held = payload.contiguous().cpu();
    float scale = 0;
    std::memcpy(&scale, d.held.data_ptr<uint8_t>(), 4);
    // The values of bit * (2·scale) − scale in fp32, as the tensor expression computes them.
    const float twice = 2 * scale;
    d.one = 1.0f * twice - scale;
    d.zero = 0.0f * twice - scale;
    d.bits = d.held.data_ptr<uint8_t>() + 4;
    return d;
  }
};

}  // namespace

std::unique_ptr<Compressor> make_sign_compressor() { return std::make_unique<SignCompressor>(); }

std::unique_ptr<Compressor> make_scaled_sign_compressor() {
  return std::make_unique<ScaledSignCompressor>();
}

}  // namespace cedar
