// Error feedback as a decorator around a compressor (algorithms/exchange/error_feedback.h): with
// top-k and random-k (shared and own index sets) the memory is the exact residual at every step and
// nothing is lost over the steps. With the scaled sign, whose codec forms p = e + g·scale as it
// encodes (Compressor::compress_accumulated), the payloads and memories are those of the separate
// tensor operations bit for bit, on odd sizes and gradients at unaligned addresses.
#include "algorithms/exchange/error_feedback.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <string>

#include "algorithms/codecs/codecs.h"
#include "algorithms/codecs/randomk_codec.h"
#include "algorithms/codecs/topk_codec.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::randn_seeded;
using testing::same_bits;
using testing::topk_dense;

// e' = (g + e) − D(C(g + e)) at every step, and Σ sent + final memory = Σ g (nothing lost).
void check_error_feedback(Compressor& c, int64_t k, bool check_topk) {
  ErrorFeedback ef;
  const int64_t d = 500;
  auto sent_sum = torch::zeros({d}, torch::kDouble), g_sum = torch::zeros({d}, torch::kDouble);
  auto e = torch::zeros({d});
  for (int step = 0; step < 6; ++step) {
    auto g = randn_seeded(d, 10 + step);
    auto gen = make_generator(5, 0, step);
    auto payload = ef.compress("w", g, c, gen);
    auto p = g + e;
    auto sent = c.decompress(payload, d);
    EXPECT_EQ(sent.ne(0).sum().item<int64_t>(), k);
    if (check_topk) {
      EXPECT_TRUE(torch::equal(sent, topk_dense(p, k)));
    }
    // sent coordinates carry p exactly; the memory is p elsewhere and 0 where sent.
    auto where = sent.ne(0);
    EXPECT_TRUE(torch::equal(sent.masked_select(where), p.masked_select(where)));
    EXPECT_TRUE(torch::equal(ef.memory("w"), p - sent));
    EXPECT_TRUE(torch::equal(ef.memory("w").masked_select(where), torch::zeros({k})));
    e = ef.memory("w").clone();
    sent_sum += sent.to(torch::kDouble);
    g_sum += g.to(torch::kDouble);
  }
  EXPECT_TRUE(torch::allclose(sent_sum + e.to(torch::kDouble), g_sum, 1e-6, 1e-6));
}

TEST(ErrorFeedback, TopKInvariant) {
  TopKCompressor c(0.02);
  check_error_feedback(c, 10, true);
}

TEST(ErrorFeedback, RandomKInvariant) {
  RandomKCompressor shared(0.02, true), own(0.02, false);
  EXPECT_EQ(shared.payload_bytes(500), 4 * 10);
  EXPECT_EQ(own.payload_bytes(500), 8 * 10);
  check_error_feedback(shared, 10, false);
  check_error_feedback(own, 10, false);
}

TEST(ErrorFeedback, ScaledSignInOnePassIsTheSeparateOperations) {
  auto c = make_scaled_sign_compressor();
  for (int64_t d : {1, 7, 9, 33, 4097, 3 * 4096 + 5, 100003}) {
    for (float scale : {1.0f, 0.05f}) {
      ErrorFeedback ef;
      at::Tensor e = torch::zeros({d});
      for (int step = 0; step < 3; ++step) {
        // A gradient one float past its storage's start: not 16- or 32-byte aligned.
        at::Tensor g = randn_seeded(d + 1, 30 + step).narrow(0, 1, d);
        if (d > 9) {
          g[2] = -0.0f;
          g[d - 1] = 0.0f;
        }
        auto gen = make_generator(5, 0, step);
        const at::Tensor payload = ef.compress("w", g, *c, gen, scale);
        const at::Tensor p = (scale != 1.0f ? g * scale : g) + e;
        const at::Tensor want = c->compress(p, gen);
        const std::string where = "d " + std::to_string(d) + " scale " + std::to_string(scale) +
                                  " step " + std::to_string(step);
        EXPECT_TRUE(same_bits(payload, want)) << where;
        e = p - c->decompress(want, d);
        EXPECT_TRUE(same_bits(ef.memory("w"), e)) << where;
      }
    }
  }
}

}  // namespace
}  // namespace cedar
