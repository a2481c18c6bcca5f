// The fp16 codec: one tensor of n elements as its n IEEE halves (binary16, as the conversion to
// at::kHalf rounds them), in host byte order: 2n bytes. Decoding widens them to fp32 exactly.
#include <ATen/ATen.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/codecs.h"

namespace cedar {
namespace {

class HalfCompressor final : public Compressor {
 public:
  int64_t payload_bytes(int64_t numel) const override { return 2 * numel; }
  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    return as_bytes(x.detach().to(at::kCPU, at::kHalf));
  }
  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    // A peer's bytes are untrusted: exactly two per element, or from_bytes would drop a partial
    // value (or read too few) unnoticed.
    if (payload.scalar_type() != at::kByte || payload.dim() != 1 || payload.numel() != 2 * numel)
      throw std::invalid_argument("fp16: a payload of " + std::to_string(payload.numel()) +
                                  " bytes (" + std::string(c10::toString(payload.scalar_type())) +
                                  ", " + std::to_string(payload.dim()) + "-D) for " +
                                  std::to_string(numel) + " elements (expected " +
                                  std::to_string(2 * numel) + " uint8 bytes)");
    return from_bytes(payload, at::kHalf).to(at::kFloat);
  }
};

}  // namespace

std::unique_ptr<Compressor> make_fp16_compressor() { return std::make_unique<HalfCompressor>(); }

}  // namespace cedar
