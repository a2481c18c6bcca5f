// fp16 compression: half precision's range and rounding, payloads of any size but 2 bytes per
// value are rejected, and on several ranks every rank holds the fp32 average of the ranks'
// halves, with exact metered byte counts (also for ResNet-20's gradients).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/compressors.h"
#include "comm/bus_bytes.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::decode_error;
using testing::filler_bytes;
using testing::quantizer_grads;
using testing::StepOptions;

// Multi-rank steps: run seed 77, bucket 1, a learning rate decaying as 0.1 / (1 + t).
StepOptions rank_options() {
  StepOptions o{77, 1};
  o.lr_schedule = [](int64_t t) { return 0.1 / (1 + t); };
  return o;
}

class Fp16Ranks : public ::testing::TestWithParam<int> {};

TEST_P(Fp16Ranks, AverageOfTheHalvesAndTwoBytesPerElement) {
  const int P = GetParam();
  auto res = testing::run_steps(P, "fp16", "{}", 2, quantizer_grads, rank_options());
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

INSTANTIATE_TEST_SUITE_P(Ranks, Fp16Ranks, ::testing::Values(2, 4));

TEST(Fp16, HalfPrecisionRangeAndRounding) {
  at::Tensor q = testing::reduce_once(*testing::make_algorithm("fp16"),
                                      torch::tensor({1.0f, 1.0f + 1e-4f, 70000.0f, 1e-8f}), 0,
                                      StepOptions{77, 1});
  EXPECT_EQ(q[0].item<float>(), 1.0f);
  EXPECT_EQ(q[1].item<float>(), 1.0f);  // the nearest half to 1.0001 is 1 (spacing 2^-10)
  EXPECT_TRUE(std::isinf(q[2].item<float>()));
  EXPECT_EQ(q[3].item<float>(), 0.0f);
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

}  // namespace
}  // namespace cedar
