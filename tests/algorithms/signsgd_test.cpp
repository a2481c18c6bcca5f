// signSGD / Signum with majority vote (Bernstein et al. 2018): parameters and momentum ownership,
// the vote on hand-picked signs (ties give zero), Signum against the paper's Algorithm 1 in plain
// LibTorch over several steps on several ranks, rank agreement and exact metered byte counts,
// also for ResNet-20's gradients.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <vector>

#include "algorithms/algorithm.h"
#include "comm/bus_bytes.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::ceil_div;
using testing::decaying_lr_options;
using testing::make_algorithm;
using testing::quantizer_grads;

TEST(SignSgd, ParametersAndMomentumOwnership) {
  EXPECT_THROW(make_algorithm("signsgd", "{momentum: 1}"), ConfigError);
  EXPECT_THROW(make_algorithm("signsgd", "{momentum: -0.1}"), ConfigError);
  EXPECT_DOUBLE_EQ(testing::resolved_params("signsgd")["momentum"].as<double>(), 0.9);
  EXPECT_TRUE(make_algorithm("signsgd")->applies_momentum());
  EXPECT_TRUE(make_algorithm("signsgd", "{momentum: 0}")->applies_momentum());
}

TEST(SignSgd, MajorityVoteOnThreeRanksEqualsTheHandComputedVote) {
  // Columns: the three ranks' signs (0 counts as +) and the vote.
  const std::vector<std::vector<float>> g = {{1, -2, 3, -4, 0.5, -0.5, 0, 2, -1e-8f},
                                             {1, 2, -3, -4, 0.5, 0.5, 0, -2, -3},
                                             {-1, 2, 3, 4, -0.5, 0.5, -1, -2, 7}};
  const std::vector<float> vote = {1, 1, 1, -1, 1, 1, 1, -1, -1};
  auto res = testing::run_steps(
      3, "signsgd", "{momentum: 0}", 1,
      [&](int r, int64_t) {
        return std::vector<at::Tensor>{torch::tensor(g[r]), torch::tensor(g[r]).flip(0) * 3};
      },
      decaying_lr_options());
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(torch::equal(res[r][0].grads[0], torch::tensor(vote))) << res[r][0].grads[0];
    EXPECT_TRUE(torch::equal(res[r][0].grads[1], torch::tensor(vote).flip(0)));
    EXPECT_EQ(res[r][0].comm.payload_bytes, 2 + 2);  // ⌈9/8⌉ bytes per tensor
    EXPECT_EQ(res[r][0].comm.bus_bytes, allgather_bus_bytes(4 * 3, 3));
  }
}

TEST(SignSgd, TiesOfTheVoteGiveZero) {
  auto res = testing::run_steps(
      2, "signsgd", "{momentum: 0}", 1,
      [](int r, int64_t) {
        return std::vector<at::Tensor>{r == 0 ? torch::tensor({1.0f, -1.0f, 2.0f})
                                              : torch::tensor({-1.0f, -1.0f, 3.0f})};
      },
      decaying_lr_options());
  EXPECT_TRUE(torch::equal(res[0][0].grads[0], torch::tensor({0.0f, -1.0f, 1.0f})));
}

class SignSgdRanks : public ::testing::TestWithParam<int> {};

// Signum (β = 0.9) over 5 steps against the paper's Algorithm 1 in plain LibTorch.
TEST_P(SignSgdRanks, SignumOracleAgreementAndExactBytes) {
  const int P = GetParam();
  const int steps = 5;
  auto res = testing::run_steps(P, "signsgd", "{}", steps, quantizer_grads, decaying_lr_options());
  testing::expect_ranks_agree(res);
  std::vector<std::vector<at::Tensor>> v(P);
  int64_t bytes = 0;
  for (const auto& g : quantizer_grads(0, 0)) bytes += ceil_div(g.numel(), 8);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<at::Tensor> votes;
    for (int r = 0; r < P; ++r) {
      auto g = quantizer_grads(r, t);
      if (v[r].empty())
        for (auto& x : g) v[r].push_back(torch::zeros_like(x));
      for (size_t i = 0; i < g.size(); ++i) {
        v[r][i].mul_(0.9).add_(g[i], 1 - 0.9);
        at::Tensor s = torch::where(v[r][i] >= 0, torch::ones_like(g[i]), -torch::ones_like(g[i]));
        if (r == 0)
          votes.push_back(s);
        else
          votes[i] = votes[i] + s;
      }
    }
    for (size_t i = 0; i < votes.size(); ++i)
      EXPECT_TRUE(torch::equal(res[0][t].grads[i], votes[i].sign())) << "step " << t;
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(res[r][t].comm.payload_bytes, bytes);
      EXPECT_EQ(res[r][t].comm.bus_bytes, allgather_bus_bytes(bytes * P, P));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, SignSgdRanks, ::testing::Values(2, 3, 4));

// One bit per value, each tensor in whole bytes.
TEST(SignSgd, BytesPerStepForResNet20Gradients) {
  int64_t formula = 0;
  for (const auto& s : testing::resnet20_shapes())
    formula += ceil_div(c10::multiply_integers(s), 8);
  for (int64_t bytes : testing::resnet20_step_payloads("signsgd", "{}")) EXPECT_EQ(bytes, formula);
}

}  // namespace
}  // namespace cedar
