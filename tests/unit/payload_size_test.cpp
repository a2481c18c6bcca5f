// Decoders given payloads of the wrong size (a peer's bytes are untrusted): the scaled-sign codec
// of EF-signSGD, the fp16 codec and random-k's values-only encoding reject a short, oversized or mistyped payload
// with a message naming the codec, the size found and the size expected, before reading any of it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/exchange/sparse_exchange.h"

namespace cedar {
namespace {

// The message of what decompress throws ("" when it accepts the payload).
std::string decode_error(Compressor& codec, const at::Tensor& payload, int64_t numel) {
  try {
    codec.decompress(payload, numel);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

at::Tensor bytes(int64_t n) { return at::full({n}, 0x5a, at::kByte); }

const std::vector<float> kValues = {1.5f,  -0.5f, 2.0f, 0.0f,  -1.0f, 3.0f, -2.0f,
                                    0.5f, 1.0f,  -3.0f, 0.25f, -0.25f, 4.0f};  // 13 values

TEST(ScaledSignPayload, GoodPayloadDecodesToScaledSigns) {
  auto codec = make_scaled_sign_compressor();
  const at::Tensor x = at::tensor(kValues);
  at::Generator gen = make_generator(1, 0, 0);
  const at::Tensor payload = codec->compress(x, gen);
  ASSERT_EQ(payload.numel(), 4 + 2);  // fp32 scale + 13 sign bits in 2 bytes
  const at::Tensor y = codec->decompress(payload, 13);
  double l1 = 0;
  for (float v : kValues) l1 += std::fabs(v);
  const float scale = static_cast<float>(l1 / 13);
  for (size_t i = 0; i < kValues.size(); ++i)
    EXPECT_FLOAT_EQ(y[static_cast<int64_t>(i)].item<float>(), kValues[i] >= 0 ? scale : -scale) << i;
}

TEST(ScaledSignPayload, WrongSizesAreRejected) {
  auto codec = make_scaled_sign_compressor();
  // 13 elements take 4 + 2 bytes; shorter than the scale, a byte short, a byte over, far over.
  for (int64_t n : {0, 3, 4, 5, 7, 64}) {
    const std::string message = decode_error(*codec, bytes(n), 13);
    EXPECT_NE(message.find("ef-signsgd: a payload of " + std::to_string(n) + " bytes for 13 elements"),
              std::string::npos) << n << ": " << message;
    EXPECT_NE(message.find("expected 6"), std::string::npos) << n << ": " << message;
  }
  EXPECT_EQ(decode_error(*codec, bytes(6), 13), "");
  EXPECT_EQ(decode_error(*codec, bytes(4), 0), "");  // an empty tensor: the scale alone
}

TEST(ScaledSignPayload, MistypedPayloadsAreRejected) {
  auto codec = make_scaled_sign_compressor();
  EXPECT_NE(decode_error(*codec, at::zeros({6}, at::kFloat), 13).find("ef-signsgd: expected a 1-D uint8 payload"),
            std::string::npos);
  EXPECT_NE(decode_error(*codec, bytes(6).view({2, 3}), 13).find("ef-signsgd: expected a 1-D uint8 payload"),
            std::string::npos);
  EXPECT_NE(decode_error(*codec, bytes(6), -1).find("ef-signsgd: negative element count -1"), std::string::npos);
}

TEST(HalfPayload, OnlyTwoBytesPerElementDecode) {
  auto codec = make_fp16_compressor();
  at::Generator gen = make_generator(1, 0, 0);
  const at::Tensor payload = codec->compress(at::tensor(kValues), gen);
  ASSERT_EQ(payload.numel(), 26);
  const at::Tensor y = codec->decompress(payload, 13);
  for (size_t i = 0; i < kValues.size(); ++i)  // every value is exact in half precision
    EXPECT_EQ(y[static_cast<int64_t>(i)].item<float>(), kValues[i]) << i;
  for (int64_t n : {0, 1, 25, 27, 52}) {
    const std::string message = decode_error(*codec, bytes(n), 13);
    EXPECT_NE(message.find("fp16: a payload of " + std::to_string(n) + " bytes"), std::string::npos)
        << n << ": " << message;
    EXPECT_NE(message.find("expected 26 uint8 bytes"), std::string::npos) << n << ": " << message;
  }
  EXPECT_NE(decode_error(*codec, at::zeros({13}, at::kHalf), 13).find("fp16: a payload of 13 bytes (Half"),
            std::string::npos);
}

TEST(RandomKValuesOnlyPayload, WrongSizesAreRejected) {
  RandomKCompressor codec(0.5, /*values_only=*/true);
  const at::Tensor x = at::tensor(kValues);
  at::Generator gen = make_generator(3, 0, 0);
  const at::Tensor payload = codec.compress(x, gen);
  const int64_t k = codec.last_indices().numel();
  ASSERT_EQ(k, 7);  // ceil(13 / 2)
  ASSERT_EQ(payload.numel(), 4 * k);
  // The good payload scatters the kept values back to their coordinates.
  const at::Tensor y = codec.decompress(payload, 13);
  EXPECT_TRUE(y.index_select(0, codec.last_indices()).equal(x.index_select(0, codec.last_indices())));
  EXPECT_EQ(y.abs().sum().item<float>(), x.index_select(0, codec.last_indices()).abs().sum().item<float>());
  // A partial value (28 + 1, 28 - 1 bytes) or one value too many (32) is not the index set's.
  for (int64_t n : {29, 27, 32, 0}) {
    const at::Tensor bad = at::cat({payload, bytes(n)}).narrow(0, 0, n);
    const std::string message = decode_error(codec, bad, 13);
    EXPECT_NE(message.find("random-k: a values-only payload of " + std::to_string(n) + " bytes"),
              std::string::npos) << n << ": " << message;
    EXPECT_NE(message.find("expected 28"), std::string::npos) << n << ": " << message;
  }
  EXPECT_NE(decode_error(codec, at::zeros({7}, at::kFloat), 13).find("random-k: expected a 1-D uint8 payload"),
            std::string::npos);
}

}  // namespace
}  // namespace cedar
