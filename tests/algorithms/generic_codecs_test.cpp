// The codecs' device-generic forms (algorithms/codecs/generic_codecs.h), run on CPU tensors beside
// the CPU kernels: the same uniforms and words, the same packed bits, the same QSGD norms, and for
// every codec and parameter the same payload bytes and the same decoded bits, on sizes that are no
// multiple of a SIMD width or a bucket, with zeros of both signs and extreme finite magnitudes.
#include "algorithms/codecs/generic_codecs.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/magnitude_topk.h"
#include "algorithms/codecs/qsgd_codec.h"
#include "algorithms/codecs/simd.h"
#include "algorithms/codecs/terngrad_codec.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

const std::vector<int64_t> kSizes = {1, 3, 7, 13, 61, 1001, 4103, 9001};

// n values: Gaussian, with signed zeros, the extremes of fp32 (largest finite, smallest normal
// and subnormal), values that round up or to infinity in half precision, and a run of equal values
// that make ties, placed at a few spread positions.
at::Tensor awkward(int64_t n, uint64_t seed) {
  at::Tensor x = at::randn({n}, make_generator(seed, 0, n));
  const float special[] = {0.0f,
                           -0.0f,
                           std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::min(),
                           -std::numeric_limits<float>::denorm_min(),
                           65519.0f,
                           -65520.0f,
                           1e-8f,
                           0.5f,
                           0.5f,
                           -0.5f};
  float* p = x.data_ptr<float>();
  const int64_t count = sizeof(special) / sizeof(special[0]);
  for (int64_t k = 0; k < count && k < n; ++k) p[(k * 7919) % n] = special[k];
  return x;
}

// Moderate values only (a tensor without the extremes, whose l2 norm is finite).
at::Tensor moderate(int64_t n, uint64_t seed) {
  at::Tensor x = at::randn({n}, make_generator(seed, 1, n)).mul_(3.0f);
  float* p = x.data_ptr<float>();
  p[0] = -0.0f;
  if (n > 2) p[n / 2] = 0.0f;
  return x;
}

at::Tensor bytes_of(const uint8_t* p, int64_t n) {
  return at::from_blob(const_cast<uint8_t*>(p), {n}, at::kByte).clone();
}

TEST(GenericCodecs, CounterWordsAndUniformsAreTheKernelsAtEveryOffset) {
  for (uint64_t key : {uint64_t{0}, uint64_t{0x0123456789abcdefULL}, ~uint64_t{0}}) {
    const CounterUniforms rng(key);
    for (int64_t first : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{4} << 40})
      for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{1003}}) {
        std::vector<uint32_t> w(static_cast<size_t>(n));
        std::vector<float> u(static_cast<size_t>(n));
        rng.words(static_cast<uint64_t>(first), n, w.data());
        rng.fill(static_cast<uint64_t>(first), n, u.data());
        const at::Tensor words = generic::counter_words(rng, first, n, at::kCPU);
        const at::Tensor uniforms = generic::counter_uniforms(rng, first, n, at::kCPU);
        for (int64_t k = 0; k < n; ++k)
          ASSERT_EQ(words[k].item<int64_t>(), static_cast<int64_t>(w[static_cast<size_t>(k)]))
              << "key " << key << " element " << first + k;
        EXPECT_TRUE(same_bits(uniforms, at::from_blob(u.data(), {n}, at::kFloat)))
            << "key " << key << " first " << first << " n " << n;
      }
  }
}

TEST(GenericCodecs, UniformsAcrossSeveralPassesAreTheKernels) {
  // More than one pass of AES blocks (2^18 blocks each), starting inside a block.
  const CounterUniforms rng(77);
  const int64_t first = 2, n = (int64_t{1} << 20) + 9;
  std::vector<float> u(static_cast<size_t>(n));
  rng.fill(first, n, u.data());
  EXPECT_TRUE(same_bits(generic::counter_uniforms(rng, first, n, at::kCPU),
                        at::from_blob(u.data(), {n}, at::kFloat)));
}

TEST(GenericCodecs, PackedCodesAreBitPackingsForEveryWidth) {
  for (int bits = 1; bits <= kMaxPackedBits; ++bits)
    for (int64_t n : kSizes) {
      const at::Tensor codes =
          at::randint(0, int64_t{1} << bits, {n}, make_generator(bits, 0, n), at::kInt);
      const at::Tensor packed = generic::pack_codes(codes, bits);
      ASSERT_TRUE(at::equal(packed, pack_bits(codes, bits))) << bits << " bits, n " << n;
      ASSERT_TRUE(at::equal(generic::unpack_codes(packed, n, bits), codes))
          << bits << " bits, n " << n;
    }
}

// Every bit width and norm of QSGD, buckets shorter than a SIMD width, odd, on a byte, and longer
// than the tensor: the same norms, payload and decoding as the kernels.
TEST(GenericCodecs, QsgdPayloadAndDecodingAreTheKernels) {
  for (int bits = 1; bits <= 8; ++bits)
    for (bool max_norm : {false, true})
      for (int64_t bucket : {int64_t{1}, int64_t{7}, int64_t{512}, int64_t{100000}})
        for (int64_t n : {int64_t{13}, int64_t{1001}, int64_t{4103}}) {
          const QsgdFormat f{bits, bucket, max_norm};
          // Extremes with the l2 norm too, in short buckets (most of whose norms stay finite).
          const at::Tensor x = max_norm || bucket == 7 ? awkward(n, bits) : moderate(n, bits);
          const int64_t m = f.buckets(n);
          const CounterUniforms rng(1000 + bits);
          std::vector<float> norms(static_cast<size_t>(m));
          std::vector<uint8_t> codes(static_cast<size_t>(packed_bytes(n, bits + 1)));
          qsgd_encode(f, x.data_ptr<float>(), n, rng, norms.data(), codes.data());
          const at::Tensor expected_norms = at::from_blob(norms.data(), {m}, at::kFloat);
          if (!max_norm) {  // the fp64 sums themselves: their order shows in their last bits
            std::vector<double> sums(static_cast<size_t>(m));
            bucket_sums_of_squares(x.data_ptr<float>(), n, bucket, 0, m, sums.data());
            ASSERT_TRUE(same_bits(generic::qsgd_sums_of_squares(f, x),
                                  at::from_blob(sums.data(), {m}, at::kDouble)))
                << bits << " bits, bucket " << bucket << ", n " << n;
          }
          const at::Tensor got_norms = generic::qsgd_norms(f, x);
          ASSERT_TRUE(same_bits(got_norms, expected_norms))
              << bits << " bits, bucket " << bucket << ", n " << n << ", max " << max_norm;
          const at::Tensor payload = generic::qsgd_encode(f, x, got_norms, rng);
          const at::Tensor expected =
              at::cat({expected_norms.view(at::kByte),
                       bytes_of(codes.data(), static_cast<int64_t>(codes.size()))});
          ASSERT_TRUE(at::equal(payload, expected))
              << bits << " bits, bucket " << bucket << ", n " << n << ", max " << max_norm;
          std::vector<float> decoded(static_cast<size_t>(n));
          qsgd_decode(f, codes.data(), n, norms.data(), decoded.data());
          ASSERT_TRUE(same_bits(generic::qsgd_decode(f, payload, n),
                                at::from_blob(decoded.data(), {n}, at::kFloat)))
              << bits << " bits, bucket " << bucket << ", n " << n << ", max " << max_norm;
        }
}

// Elements whose fraction equals their uniform exactly (u < frac is false, so they round down):
// with a max-norm of s the scale is 1 and x_i = ±u_i has level 0 and fraction u_i; likewise
// TernGrad's u_i·s < |x_i| with s = 1. A comparison that rounds such a tie up changes the codes.
TEST(GenericCodecs, TiesBetweenUniformAndFractionRoundAsTheKernels) {
  const int64_t n = 1001;
  const CounterUniforms rng(0x5eed);
  std::vector<float> u(static_cast<size_t>(n));
  rng.fill(0, n, u.data());
  for (int bits = 1; bits <= 8; ++bits) {
    const QsgdFormat f{bits, n, true};
    at::Tensor x = at::from_blob(u.data(), {n}, at::kFloat).clone();
    x.narrow(0, 0, n / 2).neg_();
    x[n - 1] = static_cast<float>((1 << bits) - 1);  // the max-norm: s, so the scale is 1
    std::vector<float> norms(1);
    std::vector<uint8_t> codes(static_cast<size_t>(packed_bytes(n, bits + 1)));
    qsgd_encode(f, x.data_ptr<float>(), n, rng, norms.data(), codes.data());
    const at::Tensor payload = generic::qsgd_encode(f, x, generic::qsgd_norms(f, x), rng);
    ASSERT_TRUE(at::equal(payload.narrow(0, 4, payload.numel() - 4),
                          bytes_of(codes.data(), static_cast<int64_t>(codes.size()))))
        << bits << " bits";
  }
  // TernGrad: the kernel draws its key from the generator; x is made of that key's uniforms.
  at::Generator probe = make_generator(0, 0, 0), gen = make_generator(0, 0, 0);
  const CounterUniforms drawn(draw_key(probe));
  drawn.fill(0, n, u.data());
  at::Tensor x = at::from_blob(u.data(), {n}, at::kFloat).clone();
  x[0] = 1.0f;  // s = max|x| = 1: u_0 < 1 keeps it whatever the comparison
  std::vector<uint8_t> codes(static_cast<size_t>(packed_bytes(n, 2)));
  const float inf = std::numeric_limits<float>::infinity();
  ternarize(x.data_ptr<float>(), n, 1.0f, inf, gen, codes.data());
  const at::Tensor got = generic::ternarize(x, 1.0f, inf, drawn);
  EXPECT_TRUE(at::equal(got, bytes_of(codes.data(), static_cast<int64_t>(codes.size()))));
}

// TernGrad with clipping on and off: the scaler max|x| is the kernels'; with the kernels' (s, t)
// the codes are theirs, and decoding (first and accumulating) adds the same values.
TEST(GenericCodecs, TernGradCodesAndDecodingAreTheKernels) {
  for (double c : {0.0, 2.5})
    for (int64_t n : kSizes) {
      const at::Tensor x = c > 0 ? moderate(n, 3) : awkward(n, 3);
      const TernaryStats st = ternary_stats(x.data_ptr<float>(), n, c);
      EXPECT_TRUE(same_bits(generic::ternary_max_abs(x), at::full({}, st.max_abs)));
      if (c > 0) {  // LibTorch's fp64 sums: within a few fp32 ulps of the kernels' σ
        EXPECT_NEAR(generic::ternary_clip(x, c).item<float>(), st.clip, 4e-7 * st.clip);
      }
      const float s = std::min(st.max_abs, st.clip);
      at::Generator gen = make_generator(9, 0, n);
      at::Generator same = make_generator(9, 0, n);
      std::vector<uint8_t> codes(static_cast<size_t>(packed_bytes(n, 2)));
      ternarize(x.data_ptr<float>(), n, s, st.clip, gen, codes.data());
      const at::Tensor got = generic::ternarize(x, s, st.clip, CounterUniforms(draw_key(same)));
      ASSERT_TRUE(at::equal(got, bytes_of(codes.data(), static_cast<int64_t>(codes.size()))))
          << "clip " << c << ", n " << n;
      const float value[4] = {0.0f, s, -s, 0.0f};
      for (bool first : {true, false}) {
        at::Tensor expected = awkward(n, 5), sum = expected.clone();
        add_ternary(codes.data(), n, value, first, expected.data_ptr<float>());
        generic::add_ternary(got, n, value, first, sum);
        ASSERT_TRUE(same_bits(sum, expected)) << "clip " << c << ", n " << n << ", " << first;
      }
    }
}

// signSGD, EF-signSGD (with the kernels' scale) and fp16: the codecs' payloads and decodings.
TEST(GenericCodecs, SignScaledSignAndHalfPayloadsAreTheKernels) {
  auto sign = make_sign_compressor();
  auto scaled = make_scaled_sign_compressor();
  auto fp16 = make_fp16_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  for (int64_t n : kSizes)
    for (bool extreme : {false, true}) {
      const at::Tensor x = extreme ? awkward(n, 8) : moderate(n, 8);
      const at::Tensor signs = sign->compress(x, gen);
      ASSERT_TRUE(at::equal(generic::pack_signs(x), signs)) << n;
      ASSERT_TRUE(
          same_bits(generic::unpack_signs(signs, n, 1.0f, -1.0f), sign->decompress(signs, n)))
          << n;

      const at::Tensor payload = scaled->compress(x, gen);
      float scale = 0;
      std::memcpy(&scale, payload.data_ptr<uint8_t>(), 4);
      ASSERT_TRUE(at::equal(generic::scaled_sign_encode(x, scale), payload)) << n;
      ASSERT_TRUE(
          same_bits(generic::scaled_sign_decode(payload, n), scaled->decompress(payload, n)))
          << n;
      if (!extreme) {  // LibTorch's fp64 sum: within an fp32 ulp of the element-order sum
        EXPECT_NEAR(generic::l1_scale(x), scale, 1.2e-7 * scale) << n;
      }

      const at::Tensor halves = fp16->compress(x, gen);
      ASSERT_TRUE(at::equal(generic::halves_encode(x), halves)) << n;
      ASSERT_TRUE(same_bits(generic::halves_decode(halves, n), fp16->decompress(halves, n))) << n;
    }
}

// Top-k's rule by tensor ops selects the kernel's indices, ties at the k-th magnitude (signed
// zeros, repeated values, a mostly zero tensor) broken towards the lower index.
TEST(GenericCodecs, MagnitudeTopKIndicesAreTheKernels) {
  for (int64_t n : kSizes)
    for (bool sparse : {false, true}) {
      at::Tensor x = awkward(n, 11).round_();  // rounding makes many equal magnitudes
      if (sparse) x.mul_(at::rand({n}, make_generator(12, 0, n)).lt(0.1));
      for (int64_t k : {int64_t{0}, int64_t{1}, (n + 2) / 3, n - 1, n}) {
        if (k < 0) continue;
        std::vector<int32_t> index(static_cast<size_t>(k));
        std::vector<float> value(static_cast<size_t>(k));
        magnitude_topk(x.data_ptr<float>(), n, k, index.data(), value.data());
        const at::Tensor expected = at::from_blob(index.data(), {k}, at::kInt).to(at::kLong);
        ASSERT_TRUE(at::equal(magnitude_topk_indices(x, k), expected))
            << "n " << n << ", k " << k << ", sparse " << sparse;
      }
    }
}

TEST(GenericCodecs, DecodersReadPayloadsAtAnyByteOffset) {
  // A payload cut from a larger buffer at an odd offset (as exchanges split rank buffers).
  const QsgdFormat f{4, 7, false};
  const int64_t n = 61;
  const at::Tensor x = moderate(n, 2);
  const at::Tensor payload =
      generic::qsgd_encode(f, x, generic::qsgd_norms(f, x), CounterUniforms(3));
  const at::Tensor buffer = at::cat({at::zeros({1}, at::kByte), payload});
  EXPECT_TRUE(same_bits(generic::qsgd_decode(f, buffer.narrow(0, 1, payload.numel()), n),
                        generic::qsgd_decode(f, payload, n)));
  const at::Tensor halves = generic::halves_encode(x);
  const at::Tensor odd = at::cat({at::zeros({1}, at::kByte), halves}).narrow(0, 1, 2 * n);
  EXPECT_TRUE(same_bits(generic::halves_decode(odd, n), generic::halves_decode(halves, n)));
}

TEST(GenericCodecs, PayloadsOfTheWrongSizeAreRejected) {
  const QsgdFormat f{4, 512, false};
  EXPECT_THROW(generic::qsgd_decode(f, at::zeros({3}, at::kByte), 5), std::invalid_argument);
  EXPECT_THROW(generic::halves_decode(at::zeros({3}, at::kByte), 2), std::invalid_argument);
  EXPECT_THROW(generic::scaled_sign_decode(at::zeros({4}, at::kByte), 9), std::invalid_argument);
  EXPECT_THROW(generic::unpack_codes(at::zeros({2}, at::kByte), 9, 2), std::invalid_argument);
}

}  // namespace
}  // namespace cedar
