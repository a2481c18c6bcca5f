// The fp16 codec: one tensor of n elements as its n IEEE halves (binary16, rounded as the
// conversion to at::kHalf rounds them: half.h), in host byte order: 2n bytes. Decoding widens them
// to fp32 exactly.
#include <ATen/ATen.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/half.h"

namespace cedar {
namespace {

class HalfCompressor final : public Compressor {
 public:
  int64_t payload_bytes(int64_t numel) const override { return 2 * numel; }

  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    if (!x.is_cpu()) return generic::halves_encode(x.detach());  // where it is (generic_codecs.h)
    // Other dtypes convert to half directly (one rounding, not two through fp32).
    if (x.scalar_type() != at::kFloat) return as_bytes(x.detach().to(at::kCPU, at::kHalf));
    at::Tensor v = x.detach().cpu().contiguous();
    at::Tensor out = payload_buffer(2 * v.numel());
    floats_to_halves(v.data_ptr<float>(), v.numel(), out.data_ptr<uint8_t>());
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    check_payload(payload, numel);
    if (!payload.is_cpu()) return generic::halves_decode(payload, numel);
    at::Tensor out = at::empty({numel}, at::kFloat);
    halves_to_floats(payload.contiguous().cpu().data_ptr<uint8_t>(), numel, out.data_ptr<float>());
    return out;
  }

  void decompress_into(const at::Tensor& payload, at::Tensor& out) override {
    check_decode_target(out, "fp16", true);
    check_payload(payload, out.numel());
    if (!out.is_cpu()) {
      out.view({-1}).copy_(generic::halves_decode(payload.to(out.device()), out.numel()));
      return;
    }
    halves_to_floats(payload.contiguous().cpu().data_ptr<uint8_t>(), out.numel(),
                     out.data_ptr<float>());
  }

  // Decoding, adding and dividing in one pass over the sum (no decoded buffer).
  void add_decoded(const at::Tensor& payload, at::Tensor& sum, float divisor,
                   at::Tensor& scratch) override {
    check_decode_target(sum, "fp16", true);
    check_payload(payload, sum.numel());
    if (!sum.is_cpu()) {
      Compressor::add_decoded(payload, sum, divisor, scratch);
      return;
    }
    add_halves_to_floats(payload.contiguous().cpu().data_ptr<uint8_t>(), sum.numel(),
                         sum.data_ptr<float>(), divisor);
  }

 private:
  // A tensor of `bytes` bytes for the next payload: the previous payload's storage again once
  // nothing but this codec holds it (a fresh allocation of a large payload costs a page fault per
  // 4 KiB on every step), a new one otherwise.
  at::Tensor payload_buffer(int64_t bytes) {
    if (!buffer_.defined() || buffer_.numel() != bytes || buffer_.use_count() != 1 ||
        buffer_.storage().use_count() != 1)
      buffer_ = at::empty({bytes}, at::kByte);
    return buffer_;
  }

  // A peer's bytes are untrusted: exactly two per element, or a partial value would be dropped (or
  // too few read) unnoticed.
  static void check_payload(const at::Tensor& payload, int64_t numel) {
    check_payload_size(payload, "fp16", numel, 2 * numel, "two per element");
  }

  at::Tensor buffer_;  // the last payload
};

}  // namespace

std::unique_ptr<Compressor> make_fp16_compressor() { return std::make_unique<HalfCompressor>(); }

}  // namespace cedar
