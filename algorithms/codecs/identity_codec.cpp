// The identity codec: one tensor of n elements as its n fp32 values, in host byte order: 4n bytes.
// Decoding returns them bit for bit. The lossless setting of algorithms that take any codec
// (CHOCO-SGD with the identity is exact gossip averaging).
#include <ATen/ATen.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/generic_codecs.h"

namespace cedar {
namespace {

class IdentityCompressor final : public Compressor {
 public:
  int64_t payload_bytes(int64_t numel) const override { return 4 * numel; }

  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    const at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
    if (!v.is_cpu()) return v.view(at::kByte).clone();  // where it is, the same bytes
    return as_bytes(v);
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    if (payload.numel() != payload_bytes(numel))
      throw std::invalid_argument("identity: payload of " + std::to_string(payload.numel()) +
                                  " bytes for " + std::to_string(numel) + " values (expected " +
                                  std::to_string(payload_bytes(numel)) + ")");
    if (!payload.is_cpu()) return generic::reinterpret(payload, at::kFloat).clone();
    return from_bytes(payload, at::kFloat);
  }
};

}  // namespace

std::unique_ptr<Compressor> make_identity_compressor() {
  return std::make_unique<IdentityCompressor>();
}

}  // namespace cedar
