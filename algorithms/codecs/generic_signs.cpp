// The device-generic sign, scaled-sign and fp16 codecs (generic_codecs.h): the layouts of
// sign_codec.cpp and fp16_codec.cpp as tensor ops.
#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/generic_codecs.h"

namespace cedar::generic {

at::Tensor pack_signs(const at::Tensor& x) { return pack_codes(x.reshape({-1}).ge(0), 1); }

at::Tensor unpack_signs(const at::Tensor& bytes, int64_t n, float one, float zero) {
  const at::Tensor bit = unpack_codes(bytes.reshape({-1}), n, 1).to(at::kBool);
  const at::TensorOptions o = at::TensorOptions().dtype(at::kFloat).device(bytes.device());
  return at::where(bit, at::full({}, one, o), at::full({}, zero, o));
}

float l1_scale(const at::Tensor& p) {
  const int64_t d = p.numel();
  if (d == 0) return 0.0f;
  const double l1 = p.reshape({-1}).to(at::kDouble).abs().sum().item<double>();
  return static_cast<float>(l1 / static_cast<double>(d));
}

at::Tensor scaled_sign_encode(const at::Tensor& p, float scale) {
  const at::Tensor s =
      at::full({1}, scale, at::TensorOptions().dtype(at::kFloat).device(p.device()));
  return at::cat({s.view(at::kByte), pack_signs(p)});
}

at::Tensor scaled_sign_decode(const at::Tensor& payload, int64_t n) {
  if (n < 0 || payload.scalar_type() != at::kByte || payload.dim() != 1 ||
      payload.numel() != 4 + packed_bytes(n, 1))
    throw std::invalid_argument("ef-signsgd: a payload of " + std::to_string(payload.numel()) +
                                " bytes for " + std::to_string(n) + " elements (expected " +
                                std::to_string(4 + packed_bytes(n, 1)) + ")");
  // bit·(2·scale) − scale in fp32, with the scale read where the payload is.
  const at::Tensor scale = reinterpret(payload.narrow(0, 0, 4), at::kFloat);
  const at::Tensor twice = scale.mul(2.0f);
  const at::Tensor one = twice.mul(1.0f).sub_(scale), zero = twice.mul(0.0f).sub_(scale);
  const at::Tensor bit = unpack_codes(payload.narrow(0, 4, payload.numel() - 4), n, 1);
  return at::where(bit.to(at::kBool), one, zero);
}

at::Tensor halves_encode(const at::Tensor& x) {
  return x.reshape({-1}).to(at::kHalf).contiguous().view(at::kByte);
}

at::Tensor halves_decode(const at::Tensor& payload, int64_t n) {
  if (payload.scalar_type() != at::kByte || payload.numel() != 2 * n)
    throw std::invalid_argument("fp16: a payload of " + std::to_string(payload.numel()) +
                                " bytes for " + std::to_string(n) + " elements (expected " +
                                std::to_string(2 * n) + ")");
  return reinterpret(payload, at::kHalf).to(at::kFloat);
}

}  // namespace cedar::generic
