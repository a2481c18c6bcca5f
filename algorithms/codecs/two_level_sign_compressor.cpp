// The bit-level decoding shared by the two-level sign codecs (two_level_sign_compressor.h).
#include "algorithms/codecs/two_level_sign_compressor.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/sign_arithmetic.h"

namespace cedar {

at::Tensor TwoLevelSignCompressor::decompress(const at::Tensor& payload, int64_t numel) {
  if (!payload.is_cpu()) return decode_where_it_is(payload, numel);
  const SignDecoding d = checked_decoding(payload, numel);  // before the count sizes anything
  at::Tensor out = at::empty({std::max<int64_t>(numel, 0)}, at::kFloat);
  unpack_signs_into(d.bits, numel, d.one, d.zero, out.data_ptr<float>());
  return out;
}

void TwoLevelSignCompressor::decompress_into(const at::Tensor& payload, at::Tensor& out) {
  check_decode_target(out, name_, true);
  if (!out.is_cpu()) {
    out.view({-1}).copy_(decode_where_it_is(payload.to(out.device()), out.numel()));
    return;
  }
  const SignDecoding d = checked_decoding(payload, out.numel());
  unpack_signs_into(d.bits, out.numel(), d.one, d.zero, out.data_ptr<float>());
}

void TwoLevelSignCompressor::subtract_decoded(const at::Tensor& payload, at::Tensor& x,
                                              at::Tensor& scratch) {
  check_decode_target(x, name_, true);
  if (!x.is_cpu()) {
    Compressor::subtract_decoded(payload, x, scratch);
    return;
  }
  const SignDecoding d = checked_decoding(payload, x.numel());
  subtract_signs(d.bits, x.numel(), d.one, d.zero, x.data_ptr<float>());
}

void TwoLevelSignCompressor::add_decoded(const at::Tensor& payload, at::Tensor& sum, float divisor,
                                         at::Tensor& scratch) {
  check_decode_target(sum, name_, true);
  if (!sum.is_cpu()) {
    Compressor::add_decoded(payload, sum, divisor, scratch);
    return;
  }
  const SignDecoding d = checked_decoding(payload, sum.numel());
  add_signs(d.bits, sum.numel(), d.one, d.zero, sum.data_ptr<float>(), divisor);
}

std::optional<SignDecoding> TwoLevelSignCompressor::sign_decoding(const at::Tensor& payload,
                                                                  int64_t numel) const {
  return checked_decoding(payload, numel);
}

bool TwoLevelSignCompressor::average_into(const std::vector<at::Tensor>& payloads, at::Tensor& out,
                                          float then) {
  check_decode_target(out, name_, true);
  if (!out.is_cpu() || payloads.empty()) return false;
  std::vector<SignDecoding> held;  // keeps each payload's CPU bytes alive while the bits are read
  std::vector<const uint8_t*> bits;
  std::vector<float> one, zero;
  for (const at::Tensor& p : payloads) {
    held.push_back(checked_decoding(p, out.numel()));
    bits.push_back(held.back().bits);
    one.push_back(held.back().one);
    zero.push_back(held.back().zero);
  }
  const int streams = static_cast<int>(payloads.size());
  average_signs(bits.data(), one.data(), zero.data(), streams, out.numel(),
                streams > 1 ? static_cast<float>(streams) : 1.0f, then, out.data_ptr<float>());
  return true;
}

}  // namespace cedar
