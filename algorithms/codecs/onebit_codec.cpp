// The 1-bit codec of 1-bit SGD (onebit_codec.h): the two means and the sign bits as CPU loops, as
// tensor ops for other devices, and the Compressor around them (its decoding works on the bits,
// two_level_sign_compressor.h).
#include "algorithms/codecs/onebit_codec.h"

#include <ATen/ATen.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/sign_arithmetic.h"
#include "algorithms/codecs/two_level_sign_compressor.h"

namespace cedar {
namespace {

float side_mean(double sum, int64_t count) {
  return count ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
}

// A peer's bytes are untrusted: exactly 8 + ⌈n/8⌉ of them, 1-D uint8.
void check_onebit_payload(const at::Tensor& payload, int64_t n) {
  check_payload_size(payload, "onebit", n, onebit_payload_bytes(n),
                     "two fp32 means and " + std::to_string(packed_bytes(n, 1)) + " bytes of bits");
}

class OneBitCompressor final : public TwoLevelSignCompressor {
 public:
  OneBitCompressor() : TwoLevelSignCompressor("onebit") {}

  int64_t payload_bytes(int64_t numel) const override { return onebit_payload_bytes(numel); }

  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    const at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
    if (!v.is_cpu()) return generic::onebit_encode(v, generic::onebit_means(v));
    const int64_t n = v.numel();
    const float* xp = v.data_ptr<float>();
    at::Tensor out = at::empty({payload_bytes(n)}, at::kByte);
    uint8_t* op = out.data_ptr<uint8_t>();
    const OneBitMeans m = onebit_means(xp, n);
    std::memcpy(op, &m.zero, 4);
    std::memcpy(op + 4, &m.one, 4);
    pack_signs(xp, n, op + 8);
    return out;
  }

 protected:
  SignDecoding checked_decoding(const at::Tensor& payload, int64_t n) const override {
    check_onebit_payload(payload, n);
    SignDecoding d;
    d.held = payload.contiguous().cpu();
    const uint8_t* p = d.held.data_ptr<uint8_t>();
    std::memcpy(&d.zero, p, 4);
    std::memcpy(&d.one, p + 4, 4);
    d.bits = p + 8;
    return d;
  }

  at::Tensor decode_where_it_is(const at::Tensor& payload, int64_t n) const override {
    return generic::onebit_decode(payload, n);
  }
};

}  // namespace

OneBitMeans onebit_means(const float* x, int64_t n) {
  double sum[2] = {0, 0};
  int64_t count[2] = {0, 0};
  for (int64_t i = 0; i < n; ++i) {
    const int side = x[i] >= 0.0f ? 1 : 0;
    sum[side] += static_cast<double>(x[i]);
    ++count[side];
  }
  return {side_mean(sum[0], count[0]), side_mean(sum[1], count[1])};
}

namespace generic {

OneBitMeans onebit_means(const at::Tensor& x) {
  const at::Tensor one = x.ge(0);
  const at::Tensor d = x.to(at::kDouble);
  const at::Tensor zero_d = at::zeros({}, d.options());
  const int64_t n1 = one.sum().item<int64_t>();
  const double s1 = at::where(one, d, zero_d).sum().item<double>();
  const double s0 = at::where(one, zero_d, d).sum().item<double>();
  return {side_mean(s0, x.numel() - n1), side_mean(s1, n1)};
}

at::Tensor onebit_encode(const at::Tensor& x, OneBitMeans means) {
  const at::Tensor m = at::tensor({means.zero, means.one}).to(x.device());
  return at::cat({m.view(at::kByte), pack_signs(x)});
}

at::Tensor onebit_decode(const at::Tensor& payload, int64_t n) {
  check_onebit_payload(payload, n);
  // The means read where the payload is.
  const at::Tensor means = reinterpret(payload.narrow(0, 0, 8), at::kFloat);
  const at::Tensor bit = unpack_codes(payload.narrow(0, 8, payload.numel() - 8), n, 1);
  return at::where(bit.to(at::kBool), means[1], means[0]);
}

}  // namespace generic

std::unique_ptr<Compressor> make_onebit_compressor() {
  return std::make_unique<OneBitCompressor>();
}

}  // namespace cedar
