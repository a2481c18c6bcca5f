// Hierarchical exchange on 4 in-process ranks in nodes of 2: with a lossless inner scheme (dense)
// every rank holds the average of all ranks' gradients; each level's bytes per step equal the
// formulas (dense allreduce and broadcast inside a node, the inner compressor's between leaders
// only); each level is emulated with its own profile; the inner algorithm's state resumes bitwise;
// and bad parameters are clear errors.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "comm/network_model.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

// Rank r's gradients at step t: a 1000-vector and an 8x30 matrix, seeded by (rank, step).
std::vector<at::Tensor> grads_of(int rank, int64_t step) {
  at::Generator gen = make_generator(31, rank, step);
  return {torch::randn({1000}, gen), torch::randn({8, 30}, gen) * (rank + 1)};
}

// What one rank saw in one step: the update, and its traffic per level.
struct LevelStep {
  std::vector<at::Tensor> grads;
  std::map<std::string, CommCounters> levels;
  CommCounters total;
};

// One step of `yaml` (hierarchical) on 4 ranks through a MeteredCommunicator per rank; each
// level emulated with the given profile (nullptr: not emulated).
std::vector<LevelStep> one_step(const std::string& yaml, const NetworkProfile* intra = nullptr,
                                const NetworkProfile* inter = nullptr) {
  return testing::on_ranks(4, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    if (intra) comm.emulate_level("intra", intra);
    if (inter) comm.emulate_level("inter", inter);
    auto alg = testing::make_algorithm("hierarchical", yaml);
    GradBucket b = testing::bucket_of_grads(grads_of(comm.rank(), 0));
    std::vector<NamedTensor> params;
    for (const auto& e : b.entries) params.push_back({e.name, e.param});
    alg->setup(params, comm);
    comm.reset_step();
    StepContext ctx;
    ctx.seed = 5;
    alg->reduce_gradients(b, comm, ctx);
    LevelStep out;
    for (const auto& e : b.entries) out.grads.push_back(e.grad.clone());
    out.levels = comm.step_levels();
    out.total = comm.step();
    return out;
  });
}

TEST(Hierarchical, DenseInnerIsTheAverageOfAllRanks) {
  const auto res = one_step("{ranks_per_node: 2, inter: {name: dense}}");
  for (size_t i = 0; i < 2; ++i) {
    // The oracle: (1/4) Σ_r g_r in double. The exchange averages in fp32 in another order
    // ((g0 + g1)/2 + (g2 + g3)/2)/2, so it agrees to a few fp32 roundings of values below ~20.
    at::Tensor sum = torch::zeros_like(grads_of(0, 0)[i], torch::kDouble);
    for (int r = 0; r < 4; ++r) sum += grads_of(r, 0)[i].to(torch::kDouble);
    const at::Tensor want = (sum / 4).to(torch::kFloat);
    for (int r = 0; r < 4; ++r) {
      EXPECT_TRUE(torch::allclose(res[r].grads[i], want, /*rtol=*/0, /*atol=*/1e-5))
          << "rank " << r << " tensor " << i << " max error "
          << (res[r].grads[i] - want).abs().max().item<float>();
      EXPECT_TRUE(testing::same_bits(res[r].grads[i], res[0].grads[i])) << "ranks agree";
    }
  }
  // And the same as dense SGD's own run on 4 ranks, to the same tolerance.
  const auto dense = testing::run_steps(4, "dense", "{}", 1, grads_of);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(torch::allclose(res[0].grads[i], dense[0][0].grads[i], 0, 1e-5));
}

TEST(Hierarchical, BytesPerLevelAreTheFormulas) {
  const auto res = one_step("{ranks_per_node: 2, inter: {name: qsgd, bits: 4, bucket_size: 512}}");
  const int64_t n = 1000 + 8 * 30;
  const int64_t S = 4 * n;  // the fp32 bucket
  const int R = 2, N = 2;   // ranks per node, nodes
  // Inside a node: allreduce (payload S, bus 2(R-1)/R·S, 2(R-1) latencies), then the leader's
  // broadcast (payload S at the root only, bus S on every rank, ceil(log2 R) latencies).
  const int64_t intra_bus = 2 * (R - 1) * S / R + S;
  // Between leaders: QSGD's encodings of both tensors in one allgather, 4·⌈n/512⌉ + ⌈5n/8⌉ bytes
  // each; bus (N-1)/N of the N encodings.
  const int64_t q = (4 * 2 + (5 * 1000 + 7) / 8) + (4 * 1 + (5 * 240 + 7) / 8);
  const int64_t inter_bus = (N - 1) * N * q / N;
  for (int r = 0; r < 4; ++r) {
    const bool leader = r % R == 0;
    SCOPED_TRACE("rank " + std::to_string(r));
    const CommCounters& intra = res[r].levels.at("intra");
    EXPECT_EQ(intra.calls, 2);
    EXPECT_EQ(intra.payload_bytes, leader ? 2 * S : S);
    EXPECT_EQ(intra.bus_bytes, intra_bus);
    EXPECT_EQ(intra.latency_steps, 2 * (R - 1) + 1);
    if (leader) {
      const CommCounters& inter = res[r].levels.at("inter");
      EXPECT_EQ(inter.calls, 1);
      EXPECT_EQ(inter.payload_bytes, q);
      EXPECT_EQ(inter.bus_bytes, inter_bus);
      EXPECT_EQ(inter.latency_steps, N - 1);
    } else {
      EXPECT_EQ(res[r].levels.count("inter"), 0u) << "only leaders send between nodes";
    }
    // The step's totals are the levels' sum: nothing else was sent.
    EXPECT_EQ(res[r].total.payload_bytes, (leader ? 2 * S + q : S));
    EXPECT_EQ(res[r].total.bus_bytes, intra_bus + (leader ? inter_bus : 0));
  }
}

// Each level waits at least its own profile's modeled time: a slow profile on one level and an
// instant one on the other, then the other way round. Lower bounds only.
TEST(Hierarchical, EachLevelIsEmulatedWithItsOwnProfile) {
  const NetworkProfile slow{"slow", 0.04, 0}, instant{"instant", 0, 0};
  const std::string yaml = "{ranks_per_node: 2, inter: {name: dense}}";
  const auto a = one_step(yaml, &slow, &instant);
  // Intra: allreduce 2(R-1) = 2 and broadcast 1 latency steps.
  EXPECT_GE(a[0].levels.at("intra").seconds, 3 * 0.04);
  const auto b = one_step(yaml, &instant, &slow);
  // Inter: dense allreduce among N = 2 leaders, 2 latency steps.
  EXPECT_GE(b[0].levels.at("inter").seconds, 2 * 0.04);
  EXPECT_EQ(b[1].levels.count("inter"), 0u);
}

// The inner algorithm's state (top-k's error feedback) lives on the leaders and resumes bitwise.
TEST(Hierarchical, InnerStateResumesBitwise) {
  const std::string yaml = "{ranks_per_node: 2, inter: {name: topk, ratio: 0.05}}";
  auto init = [] {
    auto gen = make_generator(5, 0, 0);
    return std::vector<NamedTensor>{{"w", torch::randn({12, 10}, gen)},
                                    {"b", torch::randn({30}, gen)}};
  };
  auto grads = [](int rank, int64_t step, const std::vector<NamedTensor>& p) {
    std::vector<at::Tensor> g;
    for (size_t i = 0; i < p.size(); ++i)
      g.push_back(torch::randn(p[i].tensor.sizes(), make_generator(77, rank, step, i)) +
                  0.1 * p[i].tensor);
    return g;
  };
  std::mutex mu;
  std::vector<std::string> failures;
  int with_state = 0;
  run_ranks(4, [&](Communicator& comm) {
    auto alg = testing::make_algorithm("hierarchical", yaml);
    auto params = init();
    alg->setup(params, comm);
    const auto expected = testing::train_steps(*alg, params, comm, 0, 8, grads);
    auto first = testing::make_algorithm("hierarchical", yaml);
    auto params2 = init();
    first->setup(params2, comm);
    testing::train_steps(*first, params2, comm, 0, 4, grads);
    AlgorithmState state;
    first->save_state(state);
    first.reset();
    auto second = testing::make_algorithm("hierarchical", yaml);
    second->setup(params2, comm);
    second->load_state(state);
    const auto resumed = testing::train_steps(*second, params2, comm, 4, 8, grads);
    std::lock_guard<std::mutex> lock(mu);
    if (!state.empty()) ++with_state;
    for (size_t s = 0; s < 4; ++s)
      for (size_t i = 0; i < params2.size(); ++i)
        if (!testing::same_bits(resumed[s].params[i], expected[4 + s].params[i]))
          failures.push_back("rank " + std::to_string(comm.rank()) + " step " +
                             std::to_string(4 + s));
  });
  EXPECT_EQ(with_state, 2) << "the two leaders carry the error-feedback memory";
  EXPECT_TRUE(failures.empty()) << failures.front();
}

TEST(Hierarchical, BadParametersAreClearErrors) {
  auto error_of = [](const std::string& yaml) -> std::string {
    try {
      testing::make_algorithm("hierarchical", yaml);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("{inter: {name: qsgd, bits: 12}}").find("algorithm.inter (qsgd)"),
            std::string::npos);
  // Algorithms that act after the optimizer step (model averaging, gossip mixing, LAG's
  // history: the acts_after_step trait) would act on the leaders only, the parameter server trains
  // outside reduce_gradients and hierarchical would nest: refused, whichever way they are named.
  // Every other registered algorithm is accepted (script with its module's path: its defaults
  // alone are refused, as outside hierarchical).
  for (const auto& a : algorithm_catalog()) {
    if (!a.runs_from_defaults) continue;
    const bool refused = a.acts_after_step || !a.exchanges_gradients || a.name == "hierarchical";
    for (const std::string& yaml : {"{inter: " + a.name + "}", "{inter: {name: " + a.name + "}}"}) {
      const std::string error = error_of(yaml);
      if (refused) {
        EXPECT_NE(error.find("cannot be the exchange"), std::string::npos) << yaml << ": " << error;
      } else {
        EXPECT_EQ(error, "") << yaml;
      }
    }
  }
  EXPECT_NE(error_of("{inter: local-sgd}").find("cannot be the exchange"), std::string::npos);
  EXPECT_NE(error_of("{inter: {name: nope}}").find("unknown algorithm 'nope'"), std::string::npos);
  EXPECT_NE(error_of("{ranks_per_node: -1}").find("ranks_per_node"), std::string::npos);
  // 3 ranks per node do not divide 4 ranks.
  std::vector<std::string> messages(4);
  run_ranks(4, [&](Communicator& comm) {
    auto alg = testing::make_algorithm("hierarchical", "{ranks_per_node: 3}");
    try {
      alg->setup({}, comm);
    } catch (const ConfigError& e) {
      messages[static_cast<size_t>(comm.rank())] = e.what();
    }
  });
  for (const auto& m : messages) EXPECT_NE(m.find("3 ranks per node"), std::string::npos) << m;
  // The resolved parameters name the inner algorithm and its defaults.
  const YAML::Node resolved = testing::resolved_params("hierarchical", "{inter: topk}");
  EXPECT_EQ(resolved["inter"]["name"].as<std::string>(), "topk");
  EXPECT_TRUE(resolved["inter"]["ratio"].IsDefined());
  EXPECT_EQ(resolved["ranks_per_node"].as<int>(), 0);
}

// The run's node size reaches the algorithm through configure_nodes when its own parameter is 0.
TEST(Hierarchical, RunRanksPerNodeAppliesWhenTheParameterIsZero) {
  const auto levels = testing::on_ranks(4, [](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto alg = testing::make_algorithm("hierarchical", "{inter: dense}");
    alg->configure_nodes(4);
    alg->setup({}, comm);
    comm.reset_step();
    GradBucket b = testing::bucket_of_grads(grads_of(comm.rank(), 0));
    StepContext ctx;
    alg->reduce_gradients(b, comm, ctx);
    return comm.step_levels();
  });
  // One node of 4: the intra allreduce has 2(4-1) = 6 latency steps and the broadcast 2.
  EXPECT_EQ(levels[0].at("intra").latency_steps, 6 + 2);
  EXPECT_EQ(levels[0].at("inter").latency_steps, 0) << "a single leader sends nothing";
}

}  // namespace
}  // namespace cedar
