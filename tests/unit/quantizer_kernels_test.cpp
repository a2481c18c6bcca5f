// The fast paths of the quantizers against their plain definitions: pack_signs / unpack_signs are
// pack_bits(x >= 0) / its decoding, the chunked QSGD encoder and decoder produce the documented
// format (fp32 norms, then the (bits + 1)-bit codes of bit_packing.h) across chunk, bucket and
// byte boundaries with the documented uniforms (counter_rng.h), decompress_into writes the
// values decompress returns into caller storage (also through non-temporal stores, aligned or
// not), and the codecs' shared sums and maxima (simd.h) keep their documented order.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/simd.h"

namespace cedar {

namespace {

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.numel() != b.numel()) return false;
  if (a.numel() == 0) return true;  // an empty tensor may have no storage to compare
  at::Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

TEST(DrawKey, AdvancesTheGeneratorAndFollowsItsSeed) {
  at::Generator a = make_generator(3, 0, 0), b = make_generator(3, 0, 0), c = make_generator(4, 0, 0);
  const uint64_t k1 = draw_key(a), k2 = draw_key(a);
  EXPECT_NE(k1, k2);
  EXPECT_EQ(k1, draw_key(b));
  EXPECT_EQ(k2, draw_key(b));
  EXPECT_NE(k1, draw_key(c));
}

// The eight-partial-sum order of simd.h written out plainly: element i into sum i mod 8 (fp64),
// added ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)); maxima of |x| with NaNs skipped.
TEST(SimdSums, SumsAndMaximaFollowTheDocumentedOrder) {
  for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 512, 1001}) {
    at::Tensor x = at::randn({n}, make_generator(n, 3, 0)) * 1e3f + 7.0f;
    float* p = x.data_ptr<float>();
    if (n > 9) {
      p[2] = -0.0f;
      p[4] = std::numeric_limits<float>::quiet_NaN();
    }
    const double k = n ? p[0] : 0.0;
    double sq[8] = {0, 0, 0, 0, 0, 0, 0, 0}, d1[8] = {0, 0, 0, 0, 0, 0, 0, 0},
           d2[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float mx = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = p[i], d = e - k;
      sq[i % 8] += e * e;
      d1[i % 8] += d;
      d2[i % 8] += d * d;
      if (std::fabs(p[i]) > mx) mx = std::fabs(p[i]);
    }
    auto total = [](const double* s) {
      return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    };
    auto same = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
    EXPECT_TRUE(same(sum_of_squares(p, n), total(sq))) << n;
    EXPECT_EQ(max_abs(p, n), mx) << n;
    const ShiftedSums s = shifted_sums(p, n, k);
    EXPECT_TRUE(same(s.sum, total(d1))) << n;
    EXPECT_TRUE(same(s.sum_sq, total(d2))) << n;
    EXPECT_EQ(s.max_abs, mx) << n;
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

// QSGD's encoding written out plainly from its documented rule (algorithms/codecs/qsgd_codec.h).
at::Tensor qsgd_reference(const at::Tensor& x, int bits, int64_t bucket, at::Generator& gen) {
  const int64_t n = x.numel(), m = (n + bucket - 1) / bucket;
  const float s = static_cast<float>((1u << bits) - 1);
  std::vector<float> u(static_cast<size_t>(n));
  CounterUniforms(draw_key(gen)).fill(0, n, u.data());
  const float* xp = x.data_ptr<float>();
  const float* up = u.data();
  std::vector<float> norms(m);
  at::Tensor codes = at::empty({n}, at::kInt);
  int32_t* cp = codes.data_ptr<int32_t>();
  for (int64_t b = 0; b < m; ++b) {
    const int64_t lo = b * bucket, hi = std::min(n, lo + bucket);
    // Eight partial sums, element i of the bucket into sum i mod 8, added pairwise.
    double sq[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = lo; i < hi; ++i) sq[(i - lo) % 8] += static_cast<double>(xp[i]) * xp[i];
    norms[b] = static_cast<float>(
        std::sqrt(((sq[0] + sq[1]) + (sq[2] + sq[3])) + ((sq[4] + sq[5]) + (sq[6] + sq[7]))));
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
  for (int bits : {1, 2, 3, 4, 5, 6, 7, 8})
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

// decompress_into(payload, out) writes decompress(payload, n)'s values, bit for bit, into `out`:
// small outputs, outputs above kStreamingBytes (non-temporal stores) and a misaligned view.
TEST(DecompressInto, WritesTheValuesOfDecompressIntoCallerStorage) {
  const int64_t big = kStreamingBytes / 4 + 1003;
  auto qsgd = make_qsgd_compressor(4, 512, false);
  auto sign = make_sign_compressor();
  for (Compressor* codec : {qsgd.get(), sign.get()})
    for (int64_t n : {int64_t{1}, int64_t{4099}, big}) {
      at::Tensor x = at::randn({n}, make_generator(n, 2, 0));
      at::Generator gen = make_generator(1, 0, 0);
      at::Tensor payload = codec->compress(x, gen);
      at::Tensor expected = codec->decompress(payload, n);
      at::Tensor buffer = at::full({n + 1}, 7.0f);
      for (int64_t offset : {0, 1}) {  // offset 1: 4 bytes off the 16-byte alignment
        at::Tensor out = buffer.narrow(0, offset, n);
        codec->decompress_into(payload, out);
        ASSERT_TRUE(same_bits(out.contiguous(), expected)) << n << " elements, offset " << offset;
      }
    }
  at::Tensor x = at::randn({100});
  at::Generator gen = make_generator(1, 0, 0);
  for (Compressor* codec : {qsgd.get(), sign.get()}) {
    at::Tensor payload = codec->compress(x, gen);
    at::Tensor wrong_type = at::empty({100}, at::kDouble), strided = at::empty({200}).slice(0, 0, 200, 2),
               wrong_size = at::empty({92});  // 12 sign bytes, not 13
    EXPECT_THROW(codec->decompress_into(payload, wrong_type), std::invalid_argument);
    EXPECT_THROW(codec->decompress_into(payload, strided), std::invalid_argument);
    EXPECT_THROW(codec->decompress_into(payload, wrong_size), std::invalid_argument);
  }
}

}  // namespace
}  // namespace cedar
