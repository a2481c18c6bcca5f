// fp16 compression: the codec's decoded values are the IEEE half rounding of the inputs (nearest,
// ties to even, overflow to infinity, tiny values to subnormals or zero) in 2 bytes per value,
// payloads of any other size are rejected, and on several ranks every rank holds the fp32 average
// of the ranks' halves, with exact metered byte counts (also for ResNet-20's gradients).
// The conversions (codecs/half.h), F16C and portable: the halves of every 4099th fp32 bit pattern
// and of the special values are c10::Half's and LibTorch's cast's (NaNs: F16C's rule, LibTorch's
// on AVX2 machines), every half widens as c10 and LibTorch widen it, and payloads are LibTorch's
// cast's bytes.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/half.h"
#include "algorithms/codecs/simd.h"
#include "comm/bus_bytes.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::decaying_lr_options;
using testing::decode_error;
using testing::filler_bytes;
using testing::quantizer_grads;
using testing::StepOptions;

class Fp16Ranks : public ::testing::TestWithParam<int> {};

TEST_P(Fp16Ranks, AverageOfTheHalvesAndTwoBytesPerElement) {
  const int P = GetParam();
  auto res = testing::run_steps(P, "fp16", "{}", 2, quantizer_grads, decaying_lr_options());
  testing::expect_ranks_agree(res);
  int64_t n = 0;
  for (const auto& g : quantizer_grads(0, 0)) n += g.numel();
  for (int64_t t = 0; t < 2; ++t) {
    for (size_t i = 0; i < res[0][t].grads.size(); ++i) {
      at::Tensor sum = quantizer_grads(0, t)[i].to(at::kHalf).to(at::kFloat);
      for (int r = 1; r < P; ++r) sum.add_(quantizer_grads(r, t)[i].to(at::kHalf).to(at::kFloat));
      at::Tensor want = sum.div_(P);
      EXPECT_TRUE(torch::equal(res[0][t].grads[i], want)) << "step " << t << " tensor " << i;
    }
    EXPECT_EQ(res[0][t].comm.payload_bytes, 2 * n);
    EXPECT_EQ(res[0][t].comm.bus_bytes, allgather_bus_bytes(2 * n * P, P));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Fp16Ranks, ::testing::Values(2, 3, 4));  // 3: a true division

TEST(Fp16, HalfPrecisionRangeAndRounding) {
  at::Tensor q = testing::reduce_once(*testing::make_algorithm("fp16"),
                                      torch::tensor({1.0f, 1.0f + 1e-4f, 70000.0f, 1e-8f}), 0,
                                      StepOptions{77, 1});
  EXPECT_EQ(q[0].item<float>(), 1.0f);
  EXPECT_EQ(q[1].item<float>(), 1.0f);  // the nearest half to 1.0001 is 1 (spacing 2^-10)
  EXPECT_TRUE(std::isinf(q[2].item<float>()));
  EXPECT_EQ(q[3].item<float>(), 0.0f);
}

// The codec alone, on hand-picked values whose half is known and on a thousand values over a
// wide range: each decoded value is the half nearest to its input, each payload byte pair that
// half's bits.
TEST(Fp16, CodecDecodesTheHalfRoundingOfEveryValue) {
  const float inf = std::numeric_limits<float>::infinity();
  const float u = std::ldexp(1.0f, -24);  // the smallest half subnormal
  // {input, its half}: the largest half; the midpoint to the next binade (ties to even: inf);
  // ties between 1 and 1 + 2^-10 (to 1) and between 1 + 2^-10 and 1 + 2^-9 (to 1 + 2^-9);
  // subnormals: u, half of u (a tie with 0: to 0) and 3/4 of u (to u); signs and negative zero.
  const std::vector<std::pair<float, float>> known = {
      {65504.0f, 65504.0f},
      {65520.0f, inf},
      {-70000.0f, -inf},
      {1.0f + std::ldexp(1.0f, -11), 1.0f},
      {1.0f + 3 * std::ldexp(1.0f, -11), 1.0f + std::ldexp(1.0f, -9)},
      {u, u},
      {u / 2, 0.0f},
      {-0.75f * u, -u},
      {-0.0f, -0.0f},
      {-2.5f, -2.5f}};
  std::vector<float> in, want;
  for (const auto& [x, h] : known) {
    in.push_back(x);
    want.push_back(h);
  }
  auto codec = make_fp16_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  const int64_t n = static_cast<int64_t>(in.size());
  at::Tensor payload = codec->compress(torch::tensor(in), gen);
  ASSERT_EQ(payload.numel(), 2 * n);
  EXPECT_EQ(codec->payload_bytes(n), 2 * n);
  at::Tensor decoded = codec->decompress(payload, n);
  for (int64_t i = 0; i < n; ++i) {
    const float got = decoded[i].item<float>();
    EXPECT_EQ(got, want[static_cast<size_t>(i)]) << "input " << in[static_cast<size_t>(i)];
    EXPECT_EQ(std::signbit(got), std::signbit(want[static_cast<size_t>(i)])) << i;
  }

  at::Tensor exponents = torch::randint(-8, 5, {1000}, make_generator(7, 0, 0)).to(at::kFloat);
  at::Tensor x = torch::randn({1000}, make_generator(6, 0, 0)) * torch::pow(10.0f, exponents);
  at::Tensor p = codec->compress(x, gen);
  ASSERT_EQ(p.numel(), 2000);
  at::Tensor halves = x.to(at::kHalf);
  EXPECT_TRUE(testing::same_bits(p, as_bytes(halves)));
  EXPECT_TRUE(testing::same_bits(codec->decompress(p, 1000), halves.to(at::kFloat)));
}

TEST(Fp16Payload, OnlyTwoBytesPerElementDecode) {
  const std::vector<float> values = testing::codec_test_values();  // 13 values
  auto codec = make_fp16_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  const at::Tensor payload = codec->compress(at::tensor(values), gen);
  ASSERT_EQ(payload.numel(), 26);
  const at::Tensor y = codec->decompress(payload, 13);
  for (size_t i = 0; i < values.size(); ++i)  // every value is exact in half precision
    EXPECT_EQ(y[static_cast<int64_t>(i)].item<float>(), values[i]) << i;
  for (int64_t n : {0, 1, 25, 27, 52}) {
    const std::string message = decode_error(*codec, filler_bytes(n), 13);
    EXPECT_NE(message.find("fp16: a payload of " + std::to_string(n) + " bytes"), std::string::npos)
        << n << ": " << message;
    EXPECT_NE(message.find("expected 26 uint8 bytes"), std::string::npos) << n << ": " << message;
  }
  EXPECT_NE(decode_error(*codec, at::zeros({13}, at::kHalf), 13)
                .find("fp16: a payload of 13 bytes (Half"),
            std::string::npos);
}

// Two bytes per value.
TEST(Fp16, BytesPerStepForResNet20Gradients) {
  int64_t total = 0;
  for (const auto& s : testing::resnet20_shapes()) total += c10::multiply_integers(s);
  for (int64_t bytes : testing::resnet20_step_payloads("fp16", "{}")) EXPECT_EQ(bytes, 2 * total);
}

// ---------------------------------------------------------------- the conversions

uint32_t bits_of(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

float float_of_bits(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

uint16_t half_at(const uint8_t* p, size_t i) {
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return h;
}

// F16C's NaN (half.h): quiet, the sign and the top nine payload bits kept.
uint16_t nan_half(uint32_t w) { return (w >> 16 & 0x8000) | 0x7E00 | (w >> 13 & 0x3FF); }

using Encoder = std::function<void(const float*, int64_t, uint8_t*)>;
using Decoder = std::function<void(const uint8_t*, int64_t, float*)>;

std::vector<std::pair<std::string, Encoder>> encoders() {
  std::vector<std::pair<std::string, Encoder>> out = {
      {"dispatch", floats_to_halves}, {"portable", half_impl::floats_to_halves_portable}};
  if (half_impl::have_f16c()) out.push_back({"f16c", half_impl::floats_to_halves_f16c});
  return out;
}

std::vector<std::pair<std::string, Decoder>> decoders() {
  std::vector<std::pair<std::string, Decoder>> out = {
      {"dispatch", halves_to_floats}, {"portable", half_impl::halves_to_floats_portable}};
  if (half_impl::have_f16c()) out.push_back({"f16c", half_impl::halves_to_floats_f16c});
  return out;
}

TEST(Fp16Conversions, HalvesOfASweepOfFp32PatternsAreC10sAndLibTorchs) {
  std::vector<float> in;
  for (uint64_t w = 0; w < (uint64_t{1} << 32); w += 4099)
    in.push_back(float_of_bits(static_cast<uint32_t>(w)));
  // Zeros, infinities, quiet and signalling NaNs with payloads, the largest floats, the half range
  // limit (65504) and the overflow midpoint (65520), half subnormals and the ties around them,
  // fp32 subnormals, ties around 1; each with both signs.
  for (uint32_t w :
       {0x00000000u, 0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FBFFFFFu, 0x7FE00000u, 0x7FC02000u,
        0x7FFFFFFFu, 0x7F7FFFFFu, 0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x477FF001u, 0x33800000u,
        0x33000000u, 0x33000001u, 0x33C00000u, 0x38800000u, 0x387FE000u, 0x387FF000u, 0x387FD000u,
        0x00000001u, 0x007FFFFFu, 0x3F800000u, 0x3F801000u, 0x3F803000u, 0x3F801001u}) {
    in.push_back(float_of_bits(w));
    in.push_back(float_of_bits(w | 0x80000000u));
  }
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<uint16_t> want(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    want[i] = std::isnan(in[i]) ? nan_half(bits_of(in[i])) : c10::Half(in[i]).x;
  // LibTorch's cast: F16C's bits for every value where it runs vectorised (AVX2 and up).
  const at::Tensor cast = torch::from_blob(in.data(), {n}).to(at::kHalf);
  const uint8_t* lib = static_cast<const uint8_t*>(cast.data_ptr());
  for (size_t i = 0; i < in.size(); ++i) {
    if (!std::isnan(in[i]) || simd_impl::have_avx2()) {
      ASSERT_EQ(half_at(lib, i), want[i]) << std::hex << bits_of(in[i]);
    }
  }
  for (const auto& [name, encode] : encoders()) {
    std::vector<uint8_t> out(2 * in.size() + 1);
    for (int64_t offset : {0, 1}) {  // 1: halves at odd addresses
      encode(in.data(), n, out.data() + offset);
      for (size_t i = 0; i < in.size(); ++i)
        ASSERT_EQ(half_at(out.data() + offset, i), want[i])
            << name << " offset " << offset << ": " << std::hex << bits_of(in[i]);
    }
  }
}

TEST(Fp16Conversions, EveryHalfWidensAsC10AndLibTorchWidenIt) {
  std::vector<uint8_t> in(2 * 65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    std::memcpy(in.data() + 2 * h, &v, 2);
  }
  std::vector<uint32_t> want(65536);
  for (uint32_t h = 0; h < 65536; ++h)
    want[h] = bits_of(c10::detail::fp16_ieee_to_fp32_value(static_cast<uint16_t>(h)));
  const at::Tensor widened = torch::from_blob(in.data(), {65536}, at::kHalf).to(at::kFloat);
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(bits_of(widened.data_ptr<float>()[h]), want[h]) << std::hex << h;
  // Also an output of 40 copies (beyond kStreamingBytes: non-temporal stores), misaligned.
  const int64_t copies = 40, n = 65536 * copies;
  std::vector<uint8_t> many;
  for (int64_t c = 0; c < copies; ++c) many.insert(many.end(), in.begin(), in.end());
  std::vector<float> out(static_cast<size_t>(n) + 1);
  for (const auto& [name, decode] : decoders()) {
    for (int64_t offset : {0, 1}) {
      decode(many.data() + offset, 65535, out.data() + offset);  // halves at odd addresses
      for (uint32_t h = 0; h < 65535; ++h) {
        uint16_t v;
        std::memcpy(&v, many.data() + offset + 2 * h, 2);
        ASSERT_EQ(bits_of(out[offset + h]), want[v]) << name << " offset " << offset;
      }
      decode(many.data(), n, out.data() + offset);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(bits_of(out[static_cast<size_t>(offset + i)]), want[i % 65536])
            << name << " offset " << offset << " half " << std::hex << i % 65536;
    }
  }
}

// Adding decoded halves into a sum (the averaging exchange's accumulation, fused for fp16): every
// half, at every tail length of the eight-value steps, added into sums of mixed magnitudes, with
// and without the division, against c10's widening followed by fp32 addition and division.
TEST(Fp16Conversions, AddingHalvesIntoASumIsWideningThenAddingAndDividing) {
  using Adder = std::function<void(const uint8_t*, int64_t, float*, float)>;
  std::vector<std::pair<std::string, Adder>> adders = {
      {"dispatch", add_halves_to_floats}, {"portable", half_impl::add_halves_to_floats_portable}};
  if (half_impl::have_f16c()) adders.push_back({"f16c", half_impl::add_halves_to_floats_f16c});
  const int64_t n = 65536 + 7;  // every half, then a tail of seven
  std::vector<uint8_t> in(static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t v = static_cast<uint16_t>(i % 65536);
    std::memcpy(in.data() + 2 * i, &v, 2);
  }
  std::vector<float> start(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    start[i] = static_cast<float>((i % 17) - 8) * std::ldexp(1.0f, static_cast<int>(i % 41) - 20);
  for (float divisor : {1.0f, 3.0f}) {
    std::vector<uint32_t> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float v =
          start[i] + c10::detail::fp16_ieee_to_fp32_value(static_cast<uint16_t>(i % 65536));
      want[i] = bits_of(divisor == 1.0f ? v : v / divisor);
    }
    for (const auto& [name, add] : adders) {
      for (int64_t len : {n, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{15}}) {
        std::vector<float> sum = start;
        add(in.data(), len, sum.data(), divisor);
        for (int64_t i = 0; i < n; ++i) {
          const uint32_t expected = i < len ? want[i] : bits_of(start[i]);
          ASSERT_EQ(bits_of(sum[i]), expected)
              << name << " divisor " << divisor << " length " << len << " element " << i;
        }
      }
    }
  }
}

// Payloads are the bytes of LibTorch's cast to half, and decode to its cast back, for every tail
// length of the eight-value steps and a longer tensor, with infinities, overflow, -0, half and
// fp32 subnormals among the values.
TEST(Fp16Payload, PayloadIsLibTorchsCastToHalf) {
  auto codec = make_fp16_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  for (int64_t n : {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 10007}) {
    at::Tensor e = at::randint(-9, 6, {n}, make_generator(n, 1, 0)).to(at::kFloat);
    at::Tensor x = at::randn({n}, make_generator(n, 2, 0)) * at::pow(10.0f, e);
    const float specials[] = {
        std::numeric_limits<float>::infinity(), -0.0f, 7e4f, -65520.0f, 3e-6f, 1e-40f, 65504.0f};
    for (int64_t i = 0; i < n; i += 3) x.data_ptr<float>()[i] = specials[(i / 3) % 7];
    const at::Tensor halves = x.to(at::kHalf);
    const at::Tensor payload = codec->compress(x, gen);
    EXPECT_TRUE(testing::same_bits(payload, as_bytes(halves))) << n;
    EXPECT_TRUE(testing::same_bits(codec->decompress(payload, n), halves.to(at::kFloat))) << n;
    at::Tensor out = at::empty({n});
    codec->decompress_into(payload, out);
    EXPECT_TRUE(testing::same_bits(out, halves.to(at::kFloat))) << n;
  }
}

// The codec reuses its payload storage once the caller has released every view of it, and never
// while any is held.
TEST(Fp16Payload, AHeldPayloadIsNeverOverwritten) {
  auto codec = make_fp16_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  const at::Tensor x = at::randn({4099}), y = at::randn({4099});
  at::Tensor first = codec->compress(x, gen);
  const at::Tensor view = first.narrow(0, 2, 100);
  const at::Tensor copy = view.clone();
  first = at::Tensor();
  const at::Tensor second = codec->compress(y, gen);
  EXPECT_TRUE(testing::same_bits(view, copy));
  EXPECT_TRUE(testing::same_bits(second, as_bytes(y.to(at::kHalf))));
  const at::Tensor third = codec->compress(x, gen);
  EXPECT_TRUE(testing::same_bits(second, as_bytes(y.to(at::kHalf))));
  EXPECT_TRUE(testing::same_bits(third, as_bytes(x.to(at::kHalf))));
}

}  // namespace
}  // namespace cedar
