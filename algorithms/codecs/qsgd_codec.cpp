// The QSGD codec as a Compressor: the byte layout of qsgd_codec.h around the encoder and decoder.
#include "algorithms/codecs/qsgd_codec.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
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
    const Decoding d = decoding(payload, numel);
    qsgd_decode(f_, d.codes, numel, d.norms.data(), out.data_ptr<float>());
  }

  // Block by block: the first payload's block decoded into `out`, each other's into a cached
  // buffer and added (the last addition divided by the count), then divided by `then`. Blocks
  // start on a bucket and on a byte of every payload's codes, so each is decoded as qsgd_decode
  // decodes it within the whole tensor.
  bool average_into(const std::vector<at::Tensor>& payloads, at::Tensor& out, float then) override {
    check_decode_target(out, "qsgd", true);
    if (!out.is_cpu() || payloads.empty()) return false;
    const int64_t n = out.numel();
    std::vector<Decoding> held;
    for (const at::Tensor& p : payloads) held.push_back(decoding(p, n));
    int64_t block = n;  // where one bucket covers the tensor
    if (f_.bucket < n) {
      const int64_t aligned = std::lcm(f_.bucket, int64_t{8});  // a bucket and a byte of codes
      block = aligned >= kChunk ? aligned : aligned * (kChunk / aligned);
    }
    const auto streams = static_cast<int64_t>(payloads.size());
    const float divisor = static_cast<float>(streams);
    std::vector<float> other(static_cast<size_t>(std::min(block, n)));
    float* o = out.data_ptr<float>();
    for (int64_t c0 = 0; c0 < n; c0 += block) {
      const int64_t len = std::min(block, n - c0);
      const int64_t code_byte = c0 / 8 * (f_.bits + 1), bucket = c0 / f_.bucket;
      float* oc = o + c0;
      qsgd_decode(f_, held[0].codes + code_byte, len, held[0].norms.data() + bucket, oc);
      for (int64_t r = 1; r < streams; ++r) {
        const Decoding& d = held[static_cast<size_t>(r)];
        qsgd_decode(f_, d.codes + code_byte, len, d.norms.data() + bucket, other.data());
        if (r + 1 == streams) {
          for (int64_t i = 0; i < len; ++i) oc[i] = (oc[i] + other[i]) / divisor;
        } else {
          for (int64_t i = 0; i < len; ++i) oc[i] = oc[i] + other[i];
        }
      }
      if (then != 1.0f)
        for (int64_t i = 0; i < len; ++i) oc[i] = oc[i] / then;
    }
    return true;
  }

 private:
  // A checked payload's norms and codes (the codes point into `held`).
  struct Decoding {
    at::Tensor held;
    std::vector<float> norms;
    const uint8_t* codes = nullptr;
  };

  Decoding decoding(const at::Tensor& payload, int64_t numel) const {
    if (payload.numel() != payload_bytes(numel))
      throw std::invalid_argument("qsgd: a payload of " + std::to_string(payload.numel()) +
                                  " bytes for " + std::to_string(numel) + " elements (expected " +
                                  std::to_string(payload_bytes(numel)) + ")");
    Decoding d;
    d.held = payload.contiguous().cpu();
    const uint8_t* ip = d.held.data_ptr<uint8_t>();
    const int64_t m = f_.buckets(numel);
    d.norms.resize(static_cast<size_t>(m));
    if (m) std::memcpy(d.norms.data(), ip, 4 * static_cast<size_t>(m));
    d.codes = ip + 4 * m;
    return d;
  }

  QsgdFormat f_;
};

}  // namespace

std::unique_ptr<Compressor> make_qsgd_compressor(int bits, int64_t bucket_size, bool max_norm) {
  return std::make_unique<QsgdCompressor>(bits, bucket_size, max_norm);
}

}  // namespace cedar
