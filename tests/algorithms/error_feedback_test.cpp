// Error feedback as a decorator around a compressor (algorithms/exchange/error_feedback.h): with
// top-k and random-k (shared and own index sets) the memory is the exact residual at every step and
// nothing is lost over the steps.
#include "algorithms/exchange/error_feedback.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include "algorithms/codecs/randomk_codec.h"
#include "algorithms/codecs/topk_codec.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::randn_seeded;
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

}  // namespace
}  // namespace cedar
