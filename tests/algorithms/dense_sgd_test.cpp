// Dense synchronous SGD, the baseline: on 1 to 4 ranks every rank's reduced gradient is the mean
// of the ranks' gradients, in one allreduce of 4 bytes per value per bucket; it takes no
// parameters and leaves momentum to the optimizer.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "comm/bus_bytes.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

// Rank r's gradients at step t: a conv weight, a bias and a matrix of different scales per rank.
std::vector<at::Tensor> grads_of(int r, int64_t t) {
  at::Generator gen = make_generator(21, r, t);
  return {torch::randn({8, 3, 3, 3}, gen) * (r + 1), torch::randn({8}, gen),
          torch::randn({10, 8}, gen) * 1e-3 * (r + 1)};
}

class DenseSgdRanks : public ::testing::TestWithParam<int> {};

TEST_P(DenseSgdRanks, ReducedGradientIsTheMeanOfTheRanksGradients) {
  const int P = GetParam();
  auto res = testing::run_steps(P, "dense", "{}", 3, grads_of);
  testing::expect_ranks_agree(res);
  int64_t n = 0;
  for (const auto& g : grads_of(0, 0)) n += g.numel();
  for (int64_t t = 0; t < 3; ++t) {
    for (size_t i = 0; i < res[0][t].grads.size(); ++i) {
      // The mean in double; fp32 sums of P terms differ from it by a few units in the last place
      // of the largest partial sum, bounded by 1e-6 · Σ_r max|g_r|.
      at::Tensor sum = torch::zeros_like(grads_of(0, t)[i], at::kDouble);
      double bound = 0;
      for (int r = 0; r < P; ++r) {
        const at::Tensor g = grads_of(r, t)[i];
        sum += g.to(at::kDouble);
        bound += g.abs().max().item<double>();
      }
      const at::Tensor diff = res[0][t].grads[i].to(at::kDouble) - sum / P;
      EXPECT_LE(diff.abs().max().item<double>(), 1e-6 * bound) << "step " << t << " tensor " << i;
    }
    // One allreduce of the whole bucket per step (nothing crosses a link on one rank).
    for (int r = 0; r < P; ++r) {
      const auto& c = res[r][t].comm;
      EXPECT_EQ(c.calls, 1);
      EXPECT_EQ(c.payload_bytes, P > 1 ? 4 * n : 0);
      EXPECT_EQ(c.bus_bytes, allreduce_bus_bytes(4 * n, P));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DenseSgdRanks, ::testing::Values(1, 2, 3, 4));

// On one rank the gradient is returned unchanged, bit for bit.
TEST(DenseSgd, OneRankLeavesTheGradientAsItIs) {
  at::Tensor g = torch::randn({257}, make_generator(3, 0, 0));
  at::Tensor out = testing::reduce_once(*testing::make_algorithm("dense"), g, 0);
  EXPECT_TRUE(testing::same_bits(out, g));
}

TEST(DenseSgd, TakesNoParametersAndLeavesMomentumToTheOptimizer) {
  EXPECT_THROW(testing::make_algorithm("dense", "{momentum: 0.9}"), ConfigError);
  EXPECT_TRUE(dense_sgd_algorithm().params().empty());
  EXPECT_EQ(dense_sgd_algorithm().name, "dense");
  EXPECT_FALSE(testing::make_algorithm("dense")->applies_momentum());
}

}  // namespace
}  // namespace cedar
