// D-PSGD (algorithms/dpsgd.cpp): its bytes and messages on a ring; with a zero gradient the
// consensus distance shrinking at the rate of W's second largest eigenvalue magnitude squared
// (eigenvalues from torch, not from the topology code); and the exact update on graphs where every
// rank is every other's neighbour, written out by hand.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <string>
#include <vector>

#include "algorithms/gossip/topology.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::on_ranks;

// Each rank's steps of plain SGD with `name` (set up on these parameters first); returns every
// rank's parameters after each step, [rank][step][tensor].
using ParamsOf = std::function<std::vector<NamedTensor>(int rank)>;
std::vector<std::vector<std::vector<at::Tensor>>> train_on_ranks(
    int ranks, const std::string& name, const std::string& yaml, int steps,
    const ParamsOf& params_of, const testing::TrainGradsOf& grads_of, double lr = 0.1) {
  return on_ranks(ranks, [&](Communicator& comm) {
    auto alg = testing::make_algorithm(name, yaml);
    auto params = params_of(comm.rank());
    alg->setup(params, comm);
    std::vector<std::vector<at::Tensor>> out;
    testing::StepOptions options(3, 0, lr);
    for (const auto& s : testing::train_steps(*alg, params, comm, 0, steps, grads_of, options))
      out.push_back(s.params);
    return out;
  });
}

// mean_r ||x_r - x̄||² over all tensors of step t.
double consensus_distance(const std::vector<std::vector<std::vector<at::Tensor>>>& x, size_t t) {
  double d = 0;
  const size_t n = x.size();
  for (size_t i = 0; i < x[0][t].size(); ++i) {
    at::Tensor mean = torch::zeros_like(x[0][t][i]);
    for (size_t r = 0; r < n; ++r) mean += x[r][t][i];
    mean /= static_cast<double>(n);
    for (size_t r = 0; r < n; ++r) d += (x[r][t][i] - mean).pow(2).sum().item<double>();
  }
  return d / static_cast<double>(n);
}

TEST(Dpsgd, RingOfFourSendsTheModelToTwoNeighboursPerBucket) {
  // Two buckets of 17 and 6 values: per bucket one sendrecv to each of the 2 ring neighbours.
  const int64_t sizes[] = {17, 6};
  auto steps = on_ranks(4, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto alg = testing::make_algorithm("dpsgd", "{topology: ring}");
    GradBucket b0 = testing::bucket_of_shapes({{3, 4}, {5}}, 0, "a");
    GradBucket b1 = testing::bucket_of_shapes({{6}}, 1, "b");
    std::vector<NamedTensor> params;
    for (auto* b : {&b0, &b1})
      for (auto& e : b->entries) {
        e.param = torch::full(e.grad.sizes(), static_cast<float>(comm.rank()));
        params.push_back({e.name, e.param});
      }
    alg->setup(params, comm);
    std::vector<CommCounters> out;
    for (int64_t t = 0; t < 2; ++t) {
      StepContext ctx;
      ctx.step = t;
      comm.reset_step();
      alg->reduce_gradients(b0, comm, ctx);
      alg->reduce_gradients(b1, comm, ctx);
      alg->after_step(params, {}, comm, ctx);
      out.push_back(comm.step());
    }
    EXPECT_EQ(comm.totals().size(), 1u) << "only point-to-point messages, no collective";
    EXPECT_EQ(comm.totals().count("sendrecv"), 1u);
    return out;
  });
  for (const auto& rank : steps)
    for (const auto& c : rank) {
      EXPECT_EQ(c.payload_bytes, 2 * 4 * (sizes[0] + sizes[1])) << "2 neighbours x fp32 model";
      EXPECT_EQ(c.calls, 2 * 2) << "2 sendrecv per bucket";
      EXPECT_EQ(c.latency_steps, 4);
    }
}

// Zero gradients: x <- W x. The disagreement lives in the eigenvectors of W other than the
// constant one, so the consensus distance shrinks per step by at most λ² (λ: the second largest
// eigenvalue magnitude) and, once the other modes died out, by exactly λ².
void expect_consensus_rate(const std::string& topology, int p, int steps) {
  const Topology t = make_topology(topology, p);
  auto eig = torch::linalg_eigvalsh(mixing_matrix(t)).abs().sort(0, true);
  const at::Tensor sorted = std::get<0>(eig);
  ASSERT_NEAR(sorted[0].item<double>(), 1.0, 1e-12);
  const double lambda = sorted[1].item<double>();
  const double rate = lambda * lambda;
  auto params_of = [](int r) {
    auto gen = make_generator(21, r, 0);
    return std::vector<NamedTensor>{{"w", torch::randn({7, 5}, gen).to(torch::kDouble)},
                                    {"b", torch::randn({9}, gen).to(torch::kDouble)}};
  };
  auto zero = [](int, int64_t, const std::vector<NamedTensor>& ps) {
    std::vector<at::Tensor> g;
    for (const auto& x : ps) g.push_back(torch::zeros_like(x.tensor));
    return g;
  };
  const auto x = train_on_ranks(p, "dpsgd", "{topology: " + topology + "}", steps, params_of, zero);
  std::vector<double> d;
  for (int s = 0; s < steps; ++s) d.push_back(consensus_distance(x, static_cast<size_t>(s)));
  for (size_t s = 1; s < d.size(); ++s)
    EXPECT_LE(d[s] / d[s - 1], rate * (1 + 1e-9)) << topology << " step " << s;
  EXPECT_NEAR(d.back() / d[d.size() - 2], rate, 1e-4 * rate) << topology << ": λ = " << lambda;
  EXPECT_LT(d.back(), d.front() * std::pow(rate, steps - 2)) << "geometric decrease";
}

TEST(Dpsgd, ConsensusDistanceShrinksAtTheSquaredSecondEigenvalueOnRing8) {
  expect_consensus_rate("ring", 8, 40);  // λ = (1 + 2 cos(2π/8)) / 3
}

TEST(Dpsgd, ConsensusDistanceShrinksAtTheSquaredSecondEigenvalueOnExponential8) {
  // 20 steps: (1/9)^20 of the start is still far above fp64 rounding of the mean.
  expect_consensus_rate("exponential", 8, 20);  // λ = 1/3
}

// Where every rank neighbours every other, W = J/P: x_i <- mean_j x_j - lr·g_i, and the average
// follows x̄ <- x̄ - lr·mean_i g_i. Gradients depend on the local model (g = x - c_r) and the
// optimizer is plain SGD.
void expect_complete_graph_update(const std::string& topology, int p) {
  constexpr double kLr = 0.1;
  auto params_of = [](int r) {
    return std::vector<NamedTensor>{{"x", torch::arange(4, torch::kDouble) * (r + 1) - r}};
  };
  auto target = [](int r) { return torch::full({4}, 2.0 * r, torch::kDouble); };
  auto grads = [&](int r, int64_t, const std::vector<NamedTensor>& ps) {
    return std::vector<at::Tensor>{ps[0].tensor - target(r)};
  };
  const auto x =
      train_on_ranks(p, "dpsgd", "{topology: " + topology + "}", 3, params_of, grads, kLr);
  // By hand, on plain tensors.
  std::vector<at::Tensor> cur;
  for (int r = 0; r < p; ++r) cur.push_back(params_of(r)[0].tensor);
  for (size_t s = 0; s < 3; ++s) {
    at::Tensor mean = torch::zeros({4}, torch::kDouble), mean_grad = torch::zeros_like(mean);
    for (int r = 0; r < p; ++r) {
      mean += cur[static_cast<size_t>(r)] / p;
      mean_grad += (cur[static_cast<size_t>(r)] - target(r)) / p;
    }
    std::vector<at::Tensor> next;
    for (int r = 0; r < p; ++r)
      next.push_back(mean - kLr * (cur[static_cast<size_t>(r)] - target(r)));
    at::Tensor next_mean = torch::zeros_like(mean);
    for (int r = 0; r < p; ++r) {
      EXPECT_TRUE(torch::allclose(x[static_cast<size_t>(r)][s][0], next[static_cast<size_t>(r)],
                                  1e-6, 1e-6))
          << topology << " rank " << r << " step " << s;
      next_mean += x[static_cast<size_t>(r)][s][0] / p;
    }
    EXPECT_TRUE(torch::allclose(next_mean, mean - kLr * mean_grad, 1e-6, 1e-6))
        << "the average model takes the averaged gradient step";
    cur = next;
  }
}

TEST(Dpsgd, CompleteGraphsTakeTheMeanModelMinusTheLocalStep) {
  expect_complete_graph_update("ring", 3);
  expect_complete_graph_update("exponential", 4);
}

TEST(Dpsgd, OneRankIsPlainSgdAndBadParametersAreNamed) {
  auto x = train_on_ranks(
      1, "dpsgd", "{}", 2,
      [](int) {
        return std::vector<NamedTensor>{{"x", torch::ones({3})}};
      },
      [](int, int64_t, const std::vector<NamedTensor>&) {
        return std::vector<at::Tensor>{torch::full({3}, 2.0f)};
      });
  EXPECT_TRUE(torch::allclose(x[0][1][0], torch::full({3}, 1.0f - 2 * 0.1f * 2)));
  try {
    testing::make_algorithm("dpsgd", "{topology: star}");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("topology"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cedar
