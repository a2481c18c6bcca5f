// The natural-compression codec (natural_codec.h): the 9-bit codes of C_nat as CPU loops, as
// tensor ops for other devices, and the Compressor around them.
#include "algorithms/codecs/natural_codec.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/generic_codecs.h"

namespace cedar {
namespace {

constexpr uint32_t kNaturalMantissa = 0x7fffff;
constexpr uint32_t kNaturalInfinite = 0xff;  // the exponent field of infinities and NaNs
constexpr int64_t kNaturalWordsPerPass = 4096;

// A peer's bytes are untrusted: exactly ⌈9n/8⌉ of them, 1-D uint8.
void check_natural_payload(const at::Tensor& payload, int64_t n) {
  check_payload_size(payload, "natural", n, packed_bytes(n, kNaturalBits), "9 bits per element");
}

class NaturalCompressor final : public Compressor {
 public:
  int64_t payload_bytes(int64_t numel) const override { return packed_bytes(numel, kNaturalBits); }

  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override {
    const at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
    const CounterUniforms rng(draw_key(gen));
    if (!v.is_cpu()) return generic::natural_encode(v, rng);  // encoded where it is
    at::Tensor out = at::empty({payload_bytes(v.numel())}, at::kByte);
    natural_encode(v.data_ptr<float>(), v.numel(), rng, out.data_ptr<uint8_t>());
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    if (!payload.is_cpu()) return generic::natural_decode(payload, numel);
    check_natural_payload(payload, numel);
    at::Tensor out = at::empty({numel}, at::kFloat);
    natural_decode(payload.contiguous().data_ptr<uint8_t>(), numel, out.data_ptr<float>());
    return out;
  }

  void decompress_into(const at::Tensor& payload, at::Tensor& out) override {
    check_decode_target(out, "natural", true);
    if (!out.is_cpu()) {
      out.view({-1}).copy_(generic::natural_decode(payload.to(out.device()), out.numel()));
      return;
    }
    check_natural_payload(payload, out.numel());
    const at::Tensor held = payload.contiguous().cpu();
    natural_decode(held.data_ptr<uint8_t>(), out.numel(), out.data_ptr<float>());
  }
};

// The code of x for the random word w (the rule of natural_codec.h).
inline uint32_t natural_code(const float* x, uint32_t w) {
  uint32_t b;
  std::memcpy(&b, x, 4);
  const uint32_t e = (b >> 23) & 0xff;
  const uint32_t up = e != kNaturalInfinite && (w & kNaturalMantissa) < (b & kNaturalMantissa);
  return (b >> 31) << 8 | (e + up);
}

// Eight codes fill nine bytes: codes 0..6 and the low bit of code 7 in the first eight (bit 9k
// onward for code k, LSB first), the rest of code 7 in the ninth: bit_packing.h's stream, whole
// groups at a time. The bytes are assembled by shifts, so the layout does not depend on the host.
void put_group(const uint32_t code[8], uint8_t* out) {
  uint64_t lo = uint64_t{code[7]} << 63;
  for (int k = 0; k < 7; ++k) lo |= uint64_t{code[k]} << (9 * k);
  for (int b = 0; b < 8; ++b) out[b] = static_cast<uint8_t>(lo >> (8 * b));
  out[8] = static_cast<uint8_t>(code[7] >> 1);
}

void get_group(const uint8_t* in, uint32_t code[8]) {
  uint64_t lo = 0;
  for (int b = 0; b < 8; ++b) lo |= uint64_t{in[b]} << (8 * b);
  for (int k = 0; k < 7; ++k) code[k] = static_cast<uint32_t>(lo >> (9 * k)) & 0x1ff;
  code[7] = static_cast<uint32_t>(lo >> 63) | uint32_t{in[8]} << 1;
}

}  // namespace

void natural_encode(const float* x, int64_t n, const CounterUniforms& rng, uint8_t* out) {
  static_assert(kNaturalWordsPerPass % 8 == 0, "passes hold whole groups");
  uint32_t words[kNaturalWordsPerPass];
  uint32_t code[8];
  for (int64_t c0 = 0; c0 < n; c0 += kNaturalWordsPerPass) {
    const int64_t len = std::min(kNaturalWordsPerPass, n - c0);
    rng.words(static_cast<uint64_t>(c0), len, words);
    int64_t i = 0;
    for (; i + 8 <= len; i += 8, out += 9) {
      for (int k = 0; k < 8; ++k) code[k] = natural_code(x + c0 + i + k, words[i + k]);
      put_group(code, out);
    }
    if (i < len) {  // the last pass's partial group
      BitWriter writer(out, kNaturalBits);
      for (; i < len; ++i) writer.put(natural_code(x + c0 + i, words[i]));
      writer.finish();
    }
  }
}

void natural_decode(const uint8_t* in, int64_t n, float* out) {
  uint32_t code[8];
  auto value = [](uint32_t c, float* o) {
    const uint32_t b = (c >> 8) << 31 | (c & 0xff) << 23;
    std::memcpy(o, &b, 4);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8, in += 9) {
    get_group(in, code);
    for (int k = 0; k < 8; ++k) value(code[k], out + i + k);
  }
  BitReader reader(in, kNaturalBits);
  for (; i < n; ++i) value(reader.get(), out + i);
}

namespace generic {

at::Tensor natural_encode(const at::Tensor& x, const CounterUniforms& rng) {
  const at::Tensor b = x.view(at::kInt).to(at::kLong).bitwise_and(0xffffffffLL);
  const at::Tensor e = b.bitwise_right_shift(23).bitwise_and(0xff);
  const at::Tensor w = counter_words(rng, 0, x.numel(), x.device()).bitwise_and(kNaturalMantissa);
  const at::Tensor up = w.lt(b.bitwise_and(kNaturalMantissa)).logical_and_(e.ne(kNaturalInfinite));
  return pack_codes(b.bitwise_right_shift(31).bitwise_left_shift(8).add_(e).add_(up), kNaturalBits);
}

at::Tensor natural_decode(const at::Tensor& payload, int64_t n) {
  check_natural_payload(payload, n);
  const at::Tensor code = unpack_codes(payload, n, kNaturalBits);
  // The exponent field in place (at most 0x7f800000: no int32 overflow), then the sign: negation
  // sets exactly the sign bit of a zero, a power of two or an infinity.
  const at::Tensor v = code.bitwise_and(0xff).bitwise_left_shift(23).view(at::kFloat);
  return at::where(code.ge(256), v.neg(), v);
}

}  // namespace generic

std::unique_ptr<Compressor> make_natural_compressor() {
  return std::make_unique<NaturalCompressor>();
}

}  // namespace cedar
