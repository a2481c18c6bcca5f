// The QSGD codec as a Compressor: the byte layout of qsgd_codec.h around the encoder and decoder.
#include "algorithms/codecs/qsgd_codec.h"

#include <ATen/ATen.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/generic_codecs.h"

namespace cedar {
namespace {

class QsgdCompressor final : public Compressor {
 public:
  QsgdCompressor(int bits, int64_t bucket, bool max_norm) : f_{bits, bucket, max_norm} {}

  int64_t payload_bytes(int64_t numel) const override {
    return 4 * f_.buckets(numel) + packed_bytes(numel, f_.bits + 1);
  }

  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override {
    if (!x.is_cpu()) {  // encoded where it is, with the kernels' bytes (generic_codecs.h)
      const at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
      const CounterUniforms rng(draw_key(gen));
      return generic::qsgd_encode(f_, v, generic::qsgd_norms(f_, v), rng);
    }
    at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
    const int64_t n = v.numel();
    const int64_t m = f_.buckets(n);
    at::Tensor out = at::empty({payload_bytes(n)}, at::kByte);
    uint8_t* op = out.data_ptr<uint8_t>();
    std::vector<float> norms(static_cast<size_t>(m));
    const CounterUniforms rng(draw_key(gen));
    qsgd_encode(f_, v.data_ptr<float>(), n, rng, norms.data(), op + 4 * m);
    if (m) std::memcpy(op, norms.data(), 4 * static_cast<size_t>(m));
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    if (!payload.is_cpu()) return generic::qsgd_decode(f_, payload, numel);
    at::Tensor out = at::empty({numel}, at::kFloat);
    decompress_into(payload, out);
    return out;
  }

  void decompress_into(const at::Tensor& payload, at::Tensor& out) override {
    check_decode_target(out, "qsgd", true);
    const int64_t numel = out.numel();
    if (!out.is_cpu()) {
      out.view({-1}).copy_(generic::qsgd_decode(f_, payload.to(out.device()), numel));
      return;
    }
    if (payload.numel() != payload_bytes(numel))
      throw std::invalid_argument("qsgd: a payload of " + std::to_string(payload.numel()) +
                                  " bytes for " + std::to_string(numel) + " elements (expected " +
                                  std::to_string(payload_bytes(numel)) + ")");
    const int64_t m = f_.buckets(numel);
    at::Tensor in = payload.contiguous().cpu();
    const uint8_t* ip = in.data_ptr<uint8_t>();
    std::vector<float> norms(static_cast<size_t>(m));
    if (m) std::memcpy(norms.data(), ip, 4 * static_cast<size_t>(m));
    qsgd_decode(f_, ip + 4 * m, numel, norms.data(), out.data_ptr<float>());
  }

 private:
  QsgdFormat f_;
};

}  // namespace

std::unique_ptr<Compressor> make_qsgd_compressor(int bits, int64_t bucket_size, bool max_norm) {
  return std::make_unique<QsgdCompressor>(bits, bucket_size, max_norm);
}

}  // namespace cedar
