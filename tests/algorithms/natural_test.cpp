// Natural compression (Horváth et al. 2019): every decoded value is a zero or a signed power of two
// that brackets its input, the rounding is unbiased within a Hoeffding bound, zeros and
// non-finite values keep their meaning, the payload is the documented 9-bit codes, the tensor-op
// form writes the CPU kernel's bytes; and the algorithm: a plain oracle of the averaged decodings
// on 2 and 4 ranks, agreeing ranks, and bytes per step from the format.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/natural_codec.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

constexpr uint64_t kNaturalSeed = 4321;
constexpr int64_t kNaturalBucket = 3;

// ⌈9n/8⌉: n codes of 9 bits in whole bytes.
int64_t natural_bytes(int64_t n) { return (9 * n + 7) / 8; }

at::Tensor round_trip(const at::Tensor& x, uint64_t seed) {
  auto codec = make_natural_compressor();
  at::Generator gen = make_generator(seed, 0, 0);
  return codec->decompress(codec->compress(x, gen), x.numel());
}

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

// The powers of two around |x| (fp32 has none between 0 and 2^-126 in this format, whose exponent
// field 0 is the zero): lo <= |x| <= hi, lo == hi for a power of two.
void bracket(float x, double* lo, double* hi) {
  const double a = std::fabs(static_cast<double>(x));
  if (a < std::ldexp(1.0, -126)) {
    *lo = 0;
    *hi = a == 0 ? 0 : std::ldexp(1.0, -126);
    return;
  }
  int k = 0;
  const double f = std::frexp(a, &k);  // a = f·2^k, f in [0.5, 1)
  *lo = std::ldexp(1.0, k - 1);
  *hi = f == 0.5 ? *lo : std::ldexp(1.0, k);
}

// Inputs of every kind: normals of several scales and both signs, subnormals, exact powers of two
// and signed zeros.
at::Tensor mixed_inputs() {
  at::Generator gen = make_generator(17, 0, 0);
  std::vector<at::Tensor> parts = {torch::randn({4000}, gen), torch::randn({500}, gen) * 1e-30,
                                   torch::randn({500}, gen) * 1e30,
                                   torch::randn({500}, gen) * 1e-39,  // subnormal
                                   torch::tensor({1.0f, -0.5f, 1024.0f, std::ldexp(1.0f, -126),
                                                  -std::ldexp(1.0f, -149), 0.0f, -0.0f})};
  return torch::cat(parts);
}

TEST(NaturalCodec, DecodesToZerosOrPowersOfTwoThatBracketTheInput) {
  const at::Tensor x = mixed_inputs();
  const at::Tensor d = round_trip(x, 1);
  const auto xs = testing::values_of(x), ds = testing::values_of(d);
  int64_t up = 0, down = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double lo = 0, hi = 0;
    bracket(xs[i], &lo, &hi);
    const double got = std::fabs(static_cast<double>(ds[i]));
    ASSERT_TRUE(got == lo || got == hi) << xs[i] << " decoded to " << ds[i];
    ASSERT_EQ(bits_of(ds[i]) >> 31, bits_of(xs[i]) >> 31) << xs[i] << ": the sign is kept";
    ASSERT_EQ(bits_of(ds[i]) & 0x7fffff, 0u) << ds[i] << " has mantissa bits";
    if (lo == hi) {
      ASSERT_EQ(bits_of(ds[i]), bits_of(xs[i])) << xs[i] << " is sent exactly";
    } else {
      (got == hi ? up : down) += 1;
    }
  }
  // Both directions occur (a rounding that never goes up would fail the unbiasedness test too).
  EXPECT_GT(up, 1000);
  EXPECT_GT(down, 1000);
}

// A value in the top binade rounds to 2^127 or up to infinity; infinities stay; a NaN becomes an
// infinity (nine bits have no room for it); signed zeros come back bit for bit.
TEST(NaturalCodec, ZerosAndNonFiniteValuesKeepTheirMeaning) {
  const float inf = std::numeric_limits<float>::infinity();
  const float big = std::numeric_limits<float>::max();
  at::Tensor x = torch::tensor({0.0f, -0.0f, inf, -inf, std::nanf(""), big, -big});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const auto d = testing::values_of(round_trip(x, seed));
    EXPECT_EQ(bits_of(d[0]), bits_of(0.0f));
    EXPECT_EQ(bits_of(d[1]), bits_of(-0.0f));
    EXPECT_EQ(d[2], inf);
    EXPECT_EQ(d[3], -inf);
    EXPECT_TRUE(std::isinf(d[4])) << d[4];
    EXPECT_TRUE(d[5] == std::ldexp(1.0f, 127) || d[5] == inf) << d[5];
    EXPECT_TRUE(d[6] == -std::ldexp(1.0f, 127) || d[6] == -inf) << d[6];
  }
}

// N draws of C(x) for one x: lo + (hi − lo)·B_j with B_j independent Bernoulli(p) (the words of
// distinct counters), so by Hoeffding P(|mean − x| ≥ (hi − lo)·t) ≤ 2·exp(−2N t²). With N = 2^18
// and t = sqrt(ln(2/δ) / 2N) for δ = 1e-9, t = 0.0064: a rounding biased by more than 0.64% of the
// gap fails (rounding to nearest would be off by up to 50%; GRACE's floor of the exponent by p).
TEST(NaturalCodec, UnbiasedInExpectation) {
  const int64_t N = int64_t{1} << 18;
  const double t = std::sqrt(std::log(2 / 1e-9) / (2.0 * N));
  const float values[] = {1.3f,   -0.7f, 3.0f,    1.0f + std::ldexp(1.0f, -20),
                          0.999f, 5e-3f, -1e-40f, 6e25f};
  uint64_t seed = 100;
  for (float v : values) {
    const at::Tensor d = round_trip(torch::full({N}, v), seed++).to(at::kDouble);
    const double mean = d.mean().item<double>();
    double lo = 0, hi = 0;
    bracket(v, &lo, &hi);
    EXPECT_LE(std::fabs(mean - v), (hi - lo) * t)
        << v << ": mean " << mean << " over " << N << " draws";
  }
}

// The payload is n 9-bit codes, code = exponent field | sign << 8, packed LSB first
// (bit_packing.h): ⌈9n/8⌉ bytes, and unpacking them gives each decoded value's own sign and
// exponent.
TEST(NaturalCodec, PayloadIsNineBitCodesOfSignAndExponent) {
  auto codec = make_natural_compressor();
  for (int64_t n : {1, 7, 8, 9, 1000, 4097}) {
    const at::Tensor x = mixed_inputs().narrow(0, 0, n);
    at::Generator gen = make_generator(3, 0, 0);
    const at::Tensor payload = codec->compress(x, gen);
    ASSERT_EQ(payload.numel(), natural_bytes(n)) << n << " elements";
    const auto decoded = testing::values_of(codec->decompress(payload, n));
    const at::Tensor codes = unpack_bits(payload, n, 9).to(at::kInt);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t b = bits_of(decoded[static_cast<size_t>(i)]);
      ASSERT_EQ(static_cast<uint32_t>(codes[i].item<int>()), (b >> 31) << 8 | (b >> 23 & 0xff))
          << "element " << i << " of " << n;
    }
    EXPECT_NE(testing::decode_error(*codec, payload.narrow(0, 0, payload.numel() - 1), n), "");
    EXPECT_NE(testing::decode_error(*codec, payload, n + 8), "") << "8 more codes need 9 bytes";
    EXPECT_THROW(codec->decompress(payload, -1), std::invalid_argument) << "a negative count";
  }
}

// The tensor-op form (for gradients on a GPU) writes the CPU kernel's bytes and decodes them to
// the same bits, across the kernel's passes of 4096 words and for every kind of input.
TEST(NaturalCodec, TensorOpFormWritesTheKernelBytes) {
  at::Tensor x = torch::cat({mixed_inputs(), mixed_inputs()});
  x.narrow(0, 9000, 4)
      .copy_(torch::tensor({std::numeric_limits<float>::infinity(), std::nanf(""),
                            std::numeric_limits<float>::max(), -0.0f}));
  const CounterUniforms rng(77);
  at::Tensor kernel = at::empty({natural_bytes(x.numel())}, at::kByte);
  natural_encode(x.data_ptr<float>(), x.numel(), rng, kernel.data_ptr<uint8_t>());
  const at::Tensor ops = generic::natural_encode(x, rng);
  ASSERT_TRUE(same_bits(ops, kernel));
  at::Tensor decoded = at::empty({x.numel()});
  natural_decode(kernel.data_ptr<uint8_t>(), x.numel(), decoded.data_ptr<float>());
  EXPECT_TRUE(same_bits(generic::natural_decode(ops, x.numel()), decoded));
}

// ---------------------------------------------------------------- the algorithm

std::vector<at::Tensor> rank_grads(int r, int64_t t) {
  at::Generator gen = make_generator(31, r, t, 2);
  return {torch::randn({4, 3, 3, 3}, gen) * (r + 1), torch::randn({1001}, gen),
          torch::randn({7}, gen) * 1e-4};
}

// Every rank applies the average over ranks of C_nat of each rank's gradients, rank r drawing
// from make_generator(seed, r, step, bucket) one key per tensor in bucket order; one allgather of
// Σ⌈9n_i/8⌉ bytes per rank.
TEST(Natural, RanksApplyTheAverageOfTheirRoundingsAndSendNineBitsPerElement) {
  for (int P : {2, 4}) {
    auto results = testing::run_steps(P, "natural", "{}", 2, rank_grads,
                                      testing::StepOptions{kNaturalSeed, kNaturalBucket});
    testing::expect_ranks_agree(results);
    int64_t formula = 0;
    for (const auto& g : rank_grads(0, 0)) formula += natural_bytes(g.numel());
    ASSERT_EQ(formula, 122 + 1127 + 8);
    testing::expect_allgather_of_decodings(
        results,
        [](int r, int64_t t) {
          at::Generator gen = make_generator(kNaturalSeed, r, t, kNaturalBucket);
          auto codec = make_natural_compressor();
          std::vector<at::Tensor> decoded;
          for (const at::Tensor& grad : rank_grads(r, t)) {
            const at::Tensor g = grad.reshape({-1});
            decoded.push_back(codec->decompress(codec->compress(g, gen), g.numel()));
          }
          return decoded;
        },
        formula);
  }
}

TEST(Natural, BytesPerStepForResNet20Gradients) {
  int64_t formula = 0;
  for (const auto& s : testing::resnet20_shapes())
    formula += natural_bytes(c10::multiply_integers(s));
  for (int64_t bytes : testing::resnet20_step_payloads("natural", "{}")) EXPECT_EQ(bytes, formula);
  EXPECT_LT(formula * 3.5, 4.0 * 269722);  // 9 bits instead of 32: 3.56x less
}

TEST(Natural, TakesNoParameters) {
  EXPECT_THROW(testing::make_algorithm("natural", "{bits: 9}"), ConfigError);
  EXPECT_TRUE(natural_algorithm().params().empty());
  EXPECT_EQ(natural_algorithm().name, "natural");
}

}  // namespace
}  // namespace cedar
