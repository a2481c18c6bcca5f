// The 8-bit codec of GRACE (eightbit_codec.h): its magnitude table, the encoding and decoding as
// CPU loops, as tensor ops for other devices, and the Compressor around them.
#include "algorithms/codecs/eightbit_codec.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/generic_codecs.h"

namespace cedar {
namespace {

std::array<float, kEightBitLevels> make_magnitudes() {
  std::array<float, kEightBitLevels> m{};
  size_t i = 1;
  double last = 0;
  for (int k = 5; k >= 0; --k) {
    const double decade = std::pow(10.0, -k);
    const int steps = 1 << (5 - k);
    for (double lo : {0.1, 0.45}) {
      const double width = lo == 0.1 ? 0.35 : 0.55;
      for (int j = 0; j < steps; ++j) {
        last = decade * (lo + width * (j + 0.5) / steps);
        m[i++] = static_cast<float>(last);
      }
    }
  }
  m[i] = static_cast<float>((last + 1.0) / 2.0);
  return m;
}

// The search of an encoder for the level of r = |x|/s in [0, 1] (or NaN): r's fp32 bits >> 16
// (exponent and 7 mantissa bits) index a slice of [0, 1] of relative width 2^-8 to 2^-7, `start`
// holds the largest j with m_j <= the slice's smallest value, and one step without a branch
// finishes: no slice holds more than one magnitude (the table's narrowest relative gap, m_127 −
// m_126, is 0.43% of m_127, where the slices are 0.39% wide; checked when the search is built).
// `m` is the table with +infinity at 128, so a step past 127 never succeeds.
constexpr uint32_t kSlices = (0x3f800000u >> 16) + 1;  // through r = 1.0

struct LevelSearch {
  std::array<float, kEightBitLevels + 1> m{};
  std::array<uint8_t, kSlices> start{};

  LevelSearch() {
    const float* table = eightbit_magnitudes();
    std::copy(table, table + kEightBitLevels, m.begin());
    m[kEightBitLevels] = std::numeric_limits<float>::infinity();
    int j = 0;
    for (uint32_t i = 0; i < kSlices; ++i) {
      float lo, hi;
      const uint32_t lo_bits = i << 16, hi_bits = (i + 1) << 16;
      std::memcpy(&lo, &lo_bits, 4);
      std::memcpy(&hi, &hi_bits, 4);
      while (m[j + 1] <= lo) ++j;
      start[i] = static_cast<uint8_t>(j);
      if (j + 2 <= kEightBitLevels && m[j + 2] < hi)
        throw std::logic_error("eightbit: a slice holds two magnitudes");
    }
  }

  // The largest index j with m_j <= r (0 where r < m_1 or r is NaN).
  int level(float r) const {
    uint32_t bits;
    std::memcpy(&bits, &r, 4);
    int j = start[std::min(bits >> 16, kSlices - 1)];  // a NaN: the last slice
    j += m[j + 1] <= r;
    return r >= m[1] ? j : 0;
  }
};

// max |x_i|; the canonical quiet NaN where some x_i is a NaN (whatever its own bits). Eight lanes
// without branches (a maximum does not depend on the order).
float max_magnitude(const float* x, int64_t n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  bool nan = false;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      const float a = std::fabs(x[i + k]);
      lane[k] = a > lane[k] ? a : lane[k];
      nan |= a != a;
    }
  for (; i < n; ++i) {
    const float a = std::fabs(x[i]);
    lane[0] = a > lane[0] ? a : lane[0];
    nan |= a != a;
  }
  if (nan) return std::numeric_limits<float>::quiet_NaN();
  return *std::max_element(lane, lane + 8);
}

// A peer's bytes are untrusted: exactly 4 + n of them, 1-D uint8.
void check_eightbit_payload(const at::Tensor& payload, int64_t n) {
  check_payload_size(payload, "eightbit", n, eightbit_payload_bytes(n),
                     "a fp32 scale and one byte per element");
}

class EightBitCompressor final : public Compressor {
 public:
  int64_t payload_bytes(int64_t numel) const override { return eightbit_payload_bytes(numel); }

  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    const at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
    if (!v.is_cpu()) return generic::eightbit_encode(v);  // encoded where it is
    at::Tensor out = at::empty({payload_bytes(v.numel())}, at::kByte);
    eightbit_encode(v.data_ptr<float>(), v.numel(), out.data_ptr<uint8_t>());
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    if (!payload.is_cpu()) return generic::eightbit_decode(payload, numel);
    check_eightbit_payload(payload, numel);  // before the count sizes anything
    at::Tensor out = at::empty({numel}, at::kFloat);
    decompress_into(payload, out);
    return out;
  }

  void decompress_into(const at::Tensor& payload, at::Tensor& out) override {
    check_decode_target(out, "eightbit", true);
    if (!out.is_cpu()) {
      out.view({-1}).copy_(generic::eightbit_decode(payload.to(out.device()), out.numel()));
      return;
    }
    check_eightbit_payload(payload, out.numel());
    const at::Tensor held = payload.contiguous().cpu();
    eightbit_decode(held.data_ptr<uint8_t>(), out.numel(), out.data_ptr<float>());
  }
};

}  // namespace

const float* eightbit_magnitudes() {
  static const std::array<float, kEightBitLevels> m = make_magnitudes();
  return m.data();
}

void eightbit_encode(const float* x, int64_t n, uint8_t* out) {
  static const LevelSearch search;
  const float s = max_magnitude(x, n);
  std::memcpy(out, &s, 4);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    const int level = search.level(std::fabs(x[i]) / s);
    out[4 + i] = static_cast<uint8_t>(level | ((bits >> 24) & 0x80));
  }
}

void eightbit_decode(const uint8_t* in, int64_t n, float* out) {
  const float* m = eightbit_magnitudes();
  float s;
  std::memcpy(&s, in, 4);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t b = in[4 + i];
    const float magnitude = m[b & 0x7f] * s;
    // The sign bit flipped where the code's is set: the bits of −magnitude, without a branch.
    uint32_t bits;
    std::memcpy(&bits, &magnitude, 4);
    bits ^= (b & 0x80) << 24;
    std::memcpy(out + i, &bits, 4);
  }
}

namespace generic {
namespace {

at::Tensor magnitudes_on(at::Device device) {
  return at::from_blob(const_cast<float*>(eightbit_magnitudes()), {kEightBitLevels}, at::kFloat)
      .to(device, false, true);
}

}  // namespace

at::Tensor eightbit_encode(const at::Tensor& x) {
  const at::Tensor a = x.abs();
  const at::TensorOptions o = at::TensorOptions().dtype(at::kFloat).device(x.device());
  at::Tensor s = x.numel() ? a.max().reshape({1}) : at::zeros({1}, o);
  s = at::where(s.isnan(), at::full({1}, std::numeric_limits<float>::quiet_NaN(), o), s);
  const at::Tensor r = a.div(s);
  const at::Tensor m = magnitudes_on(x.device());
  const at::Tensor level = at::bucketize(r, m.narrow(0, 1, kEightBitLevels - 1), false, true);
  const at::Tensor code = at::where(r.isnan(), at::zeros_like(level), level)
                              .bitwise_or_(x.signbit().to(at::kLong) * 128);
  return at::cat({s.view(at::kByte), code.to(at::kByte)});
}

at::Tensor eightbit_decode(const at::Tensor& payload, int64_t n) {
  check_eightbit_payload(payload, n);
  const at::Tensor s = reinterpret(payload.narrow(0, 0, 4), at::kFloat);
  const at::Tensor code = payload.narrow(0, 4, n).to(at::kLong);
  const at::Tensor magnitude =
      magnitudes_on(payload.device()).index_select(0, code.bitwise_and(0x7f)).mul_(s);
  return at::where(code.ge(128), magnitude.neg(), magnitude);
}

}  // namespace generic

std::unique_ptr<Compressor> make_eightbit_compressor() {
  return std::make_unique<EightBitCompressor>();
}

}  // namespace cedar
