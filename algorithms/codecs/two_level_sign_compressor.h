#pragma once
// The shared half of the codecs whose payload decodes each element to one of two values chosen by
// its sign bit (EF-signSGD's ±scale, 1-bit SGD's two means): decoding, subtracting, adding and
// averaging read the bits directly on the CPU (sign_arithmetic.h) and take the tensor path on other
// devices. A codec supplies its encoder, its checked reading of a payload and its device decoder.
#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

#include "algorithms/codecs/compressor.h"

namespace cedar {

class TwoLevelSignCompressor : public Compressor {
 public:
  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override;
  void decompress_into(const at::Tensor& payload, at::Tensor& out) override;
  // x − decode(payload) and (sum + decode(payload)) / divisor straight from the bits.
  void subtract_decoded(const at::Tensor& payload, at::Tensor& x, at::Tensor& scratch) override;
  void add_decoded(const at::Tensor& payload, at::Tensor& sum, float divisor,
                   at::Tensor& scratch) override;
  std::optional<SignDecoding> sign_decoding(const at::Tensor& payload,
                                            int64_t numel) const override;
  bool average_into(const std::vector<at::Tensor>& payloads, at::Tensor& out, float then) override;

 protected:
  // `name` opens every error about a decode target (the algorithm's name).
  explicit TwoLevelSignCompressor(const char* name) : name_(name) {}
  // A payload for `numel` elements, checked before anything is read from it (a peer's bytes are
  // untrusted): its bits and the values that 1 and 0 decode to, its bytes held on the CPU.
  virtual SignDecoding checked_decoding(const at::Tensor& payload, int64_t numel) const = 0;
  // The decoding as a tensor where the payload is (a device other than the CPU).
  virtual at::Tensor decode_where_it_is(const at::Tensor& payload, int64_t numel) const = 0;

 private:
  const char* name_;
};

}  // namespace cedar
