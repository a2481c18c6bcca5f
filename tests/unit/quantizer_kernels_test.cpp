// The fast paths of the quantizers against their plain definitions: uniform_floats draws exactly
// at::rand's stream, pack_signs / unpack_signs are pack_bits(x >= 0) / its decoding, and the
// chunked QSGD encoder and decoder produce the documented format (fp32 norms, then the
// (bits + 1)-bit codes of bit_packing.h) across chunk, bucket and byte boundaries.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/bit_packing.h"
#include "algorithms/compressor.h"

namespace cedar {
std::unique_ptr<Compressor> make_qsgd_compressor(int bits, int64_t bucket_size, bool max_norm);

namespace {

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.numel() != b.numel()) return false;
  if (a.numel() == 0) return true;  // an empty tensor may have no storage to compare
  at::Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

TEST(UniformFloats, DrawsAtRandsStreamAcrossStateBoundaries) {
  // 624 numbers per MT19937 state: lengths that end before, on and after its boundaries.
  const std::vector<int64_t> lengths = {1, 622, 1, 624, 625, 0, 3000, 1247, 5};
  for (uint64_t seed : {0u, 1u, 77u}) {
    at::Generator a = make_generator(seed, 0, 0), b = make_generator(seed, 0, 0);
    for (int64_t n : lengths) {
      at::Tensor expected = at::rand({n}, a);
      at::Tensor mine = at::empty({n});
      uniform_floats(b, mine.data_ptr<float>(), n);
      ASSERT_TRUE(same_bits(expected, mine)) << "seed " << seed << ", " << n << " numbers";
    }
    // The generator moved on exactly as at::rand moves it: later draws of any kind agree.
    EXPECT_TRUE(same_bits(at::rand({10}, a), at::rand({10}, b)));
    EXPECT_TRUE(same_bits(at::randn({10}, a), at::randn({10}, b)));
  }
}

TEST(UniformFloats, ValuesAreMultiplesOfTwoToTheMinus24InTheUnitInterval) {
  at::Generator g = make_generator(5, 0, 0);
  std::vector<float> u(10000);
  uniform_floats(g, u.data(), static_cast<int64_t>(u.size()));
  for (float v : u) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    ASSERT_EQ(std::ldexp(v, 24), std::floor(std::ldexp(v, 24)));
  }
}

TEST(SignPacking, PackSignsEqualsPackBitsOfGreaterOrEqualZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {0, 1, 7, 8, 9, 63, 1000, 4097}) {
    at::Tensor x = at::randn({n}, make_generator(n, 0, 0));
    float* p = x.data_ptr<float>();
    const float specials[] = {0.0f, -0.0f, nan, inf, -inf, 1e-45f, -1e-45f};
    for (int64_t i = 0; i < n; i += 5) p[i] = specials[(i / 5) % 7];
    at::Tensor mine = at::empty({packed_bytes(n, 1)}, at::kByte);
    pack_signs(p, n, mine.data_ptr<uint8_t>());
    EXPECT_TRUE(same_bits(mine, pack_bits(x.ge(0), 1))) << n << " elements";
  }
}

TEST(SignPacking, UnpackSignsMapsBitsToTheTwoValues) {
  // Bits LSB first: 0b10110001 then 0b01 (10 signs).
  at::Tensor bytes = torch::tensor({0xB1, 0x02}, at::kByte);
  at::Tensor v = unpack_signs(bytes, 10, 2.5f, -0.5f);
  const float expected[] = {2.5f, -0.5f, -0.5f, -0.5f, 2.5f, 2.5f, -0.5f, 2.5f, -0.5f, 2.5f};
  ASSERT_EQ(v.numel(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(v[i].item<float>(), expected[i]) << i;
  EXPECT_THROW(unpack_signs(bytes, 17, 1, -1), std::invalid_argument);  // needs 3 bytes
  EXPECT_THROW(unpack_signs(bytes, -1, 1, -1), std::invalid_argument);
  EXPECT_THROW(unpack_signs(bytes.to(at::kInt), 10, 1, -1), std::invalid_argument);
}

// QSGD's encoding written out plainly from its documented rule (algorithms/qsgd.cpp).
at::Tensor qsgd_reference(const at::Tensor& x, int bits, int64_t bucket, at::Generator& gen) {
  const int64_t n = x.numel(), m = (n + bucket - 1) / bucket;
  const float s = static_cast<float>((1u << bits) - 1);
  at::Tensor u = at::rand({n}, gen);
  const float* xp = x.data_ptr<float>();
  const float* up = u.data_ptr<float>();
  std::vector<float> norms(m);
  at::Tensor codes = at::empty({n}, at::kInt);
  int32_t* cp = codes.data_ptr<int32_t>();
  for (int64_t b = 0; b < m; ++b) {
    const int64_t lo = b * bucket, hi = std::min(n, lo + bucket);
    double sq = 0;
    for (int64_t i = lo; i < hi; ++i) sq += static_cast<double>(xp[i]) * xp[i];
    norms[b] = static_cast<float>(std::sqrt(sq));
    for (int64_t i = lo; i < hi; ++i) {
      float a = std::fabs(xp[i]) * (norms[b] > 0 ? s / norms[b] : 0.0f);
      if (!(a <= s)) a = s;
      const float l = std::floor(a);
      const int level = static_cast<int>(l) + (up[i] < a - l ? 1 : 0);
      cp[i] = level | (level && xp[i] < 0 ? 1 << bits : 0);
    }
  }
  at::Tensor head = at::from_blob(norms.data(), {m}, at::kFloat).clone();
  return at::cat({as_bytes(head), pack_bits(codes, bits + 1)});
}

TEST(QsgdCodec, ChunkedEncoderWritesTheDocumentedFormat) {
  for (int bits : {1, 4, 7, 8})
    for (int64_t bucket : {1, 7, 512, 5000})
      for (int64_t n : {1, 13, 4096, 4099, 9001}) {
        at::Tensor x = at::randn({n}, make_generator(n + bits, 1, 0));
        if (n > 10) {
          x[3] = 0.0f;
          x[5] = -0.0f;
        }
        auto codec = make_qsgd_compressor(bits, bucket, false);
        at::Generator g1 = make_generator(9, 0, bucket), g2 = make_generator(9, 0, bucket);
        at::Tensor payload = codec->compress(x, g1);
        ASSERT_TRUE(same_bits(payload, qsgd_reference(x, bits, bucket, g2)))
            << bits << " bits, buckets of " << bucket << ", " << n << " elements";
        // Decoding: level * norm / s with the code's sign, per bucket.
        const int64_t head_bytes = 4 * ((n + bucket - 1) / bucket);
        at::Tensor head = from_bytes(payload.narrow(0, 0, head_bytes), at::kFloat);
        at::Tensor codes =
            unpack_bits(payload.narrow(0, head_bytes, payload.numel() - head_bytes), n, bits + 1)
                .to(at::kInt);
        at::Tensor decoded = codec->decompress(payload, n);
        const float s = static_cast<float>((1u << bits) - 1);
        for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 97)) {
          const int c = codes[i].item<int>();
          const float unit = head[i / bucket].item<float>() / s;
          const float value = static_cast<float>(c & ((1 << bits) - 1)) * unit;
          ASSERT_EQ(decoded[i].item<float>(), (c >> bits) ? -value : value) << i;
        }
      }
}

}  // namespace
}  // namespace cedar
