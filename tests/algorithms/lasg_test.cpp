// LASG (Chen, Sun, Yin 2020): the WK2 and PS rules on a hand-computed case (ties upload, the
// second gradient asked for only by WK2), a stream whose minibatch gradients change only by
// sampling noise (LASG skips where LAG uploads; bytes only for uploads), the staleness bound, the
// decisions and aggregates against a replay of the rules on 4 ranks, ξ = 0 against dense SGD, and
// resuming from the saved state (the saved parameters θ̂_m included) where the rule skips.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::make_algorithm;
using testing::StepResult;
using testing::TrainGradsOf;

// Steps [0, steps) of `name` on `ranks` in-process ranks through the harness's train_steps (plain
// SGD at lr, the batch gradient at other parameters from grads_of); [rank][step].
std::vector<std::vector<StepResult>> train(int ranks, const std::string& name,
                                           const std::string& yaml, int steps,
                                           std::vector<NamedTensor> (*initial)(),
                                           const TrainGradsOf& grads_of, double lr) {
  return testing::on_ranks(ranks, [&](Communicator& comm) {
    auto alg = make_algorithm(name, yaml);
    std::vector<NamedTensor> params = initial();
    alg->setup(params, comm);
    testing::StepOptions options;
    options.lr = lr;
    return testing::train_steps(*alg, params, comm, 0, steps, grads_of, options);
  });
}

std::vector<NamedTensor> ones2() { return {{"w", torch::ones({2})}}; }

// Rank r's loss on batch b_r^k has the gradient c_r·θ + b_r^k (c = 1, 3): the same batch at two
// parameter vectors differs by c_r (θ − θ̂) whatever the batch. Every number below is exact in
// binary floating point.
at::Tensor hand_batch(int r, int64_t k) {
  static const float b[2][3][2] = {{{1, 2}, {0.5f, 0.25f}, {1, 1}},
                                   {{1, 2}, {0.5f, 0.25f}, {1, 1}}};
  return torch::tensor({b[r][k][0], b[r][k][1]});
}

struct CountedGradients {
  std::atomic<int> calls[2] = {0, 0};
  TrainGradsOf grads() {
    return [this](int r, int64_t k, const std::vector<NamedTensor>& p) {
      ++calls[r];
      return std::vector<at::Tensor>{(r == 0 ? 1.0f : 3.0f) * p[0].tensor + hand_batch(r, k)};
    };
  }
};

// D = 1, ξ = 1, lr 0.5. Step 0: g = [2, 3] and [4, 5], both upload (the first step); ∇ = [3, 4],
// θ^1 = [1, 1] − 0.5 [3, 4] = [−0.5, −1], so R^1 = ‖θ^1 − θ^0‖² / 0.5² = 6.25 / 0.25 = 25.
// Step 1, WK2: rank 0's change is ‖θ^1 − θ^0‖² = 6.25 < 25 (skip), rank 1's 9 · 6.25 = 56.25
// (upload g = [−1, −2.75], Δ = [−5, −7.75]); ∇ = [3, 4] + Δ/2 = [0.5, 0.125].
TEST(LasgRules, Wk2HandComputedSkipAndUpload) {
  CountedGradients counted;
  const auto out = train(2, "lasg", "{history: 1, xi: 1}", 3, ones2, counted.grads(), 0.5);
  for (int r = 0; r < 2; ++r) {
    const auto& s = out[static_cast<size_t>(r)];
    EXPECT_TRUE(torch::equal(s[0].grads[0], torch::tensor({3.0f, 4.0f})));
    EXPECT_EQ(s[0].stats.at("uploads"), 2);
    EXPECT_EQ(s[0].stats.count("lasg_change"), 0u) << "the first step uploads without a pass";
    EXPECT_EQ(s[0].comm.payload_bytes, 8 + 2 * 4);  // the allgatherv's length + 2 floats
    EXPECT_EQ(s[1].stats.at("lasg_threshold"), 25.0);
    EXPECT_EQ(s[1].stats.at("lasg_change"), r == 0 ? 6.25 : 56.25);
    EXPECT_EQ(s[1].stats.at("lasg_uploaded"), r == 0 ? 0 : 1);
    EXPECT_EQ(s[1].stats.at("uploads"), 1);
    EXPECT_EQ(s[1].stats.at("lasg_delay"), 1);
    EXPECT_TRUE(torch::equal(s[1].grads[0], torch::tensor({0.5f, 0.125f})));
    EXPECT_EQ(s[1].comm.payload_bytes, r == 0 ? 8 : 8 + 2 * 4);  // a skip sends no gradient
    // Step 2: R^2 = ‖[0.5, 0.125]‖² = 0.265625; rank 0 has moved 7.3 since θ̂_0 = θ^0, rank 1
    // 9 · 0.066 since θ̂_1 = θ^1: both upload.
    EXPECT_EQ(s[2].stats.at("lasg_threshold"), 0.265625);
    EXPECT_EQ(s[2].stats.at("lasg_change"), r == 0 ? 7.31640625 : 9 * 0.06640625);
    EXPECT_EQ(s[2].stats.at("uploads"), 2);
  }
  // One gradient per step, and a second one at θ̂ on steps 1 and 2.
  EXPECT_EQ(counted.calls[0].load(), 3 + 2);
  EXPECT_EQ(counted.calls[1].load(), 3 + 2);
}

// PS on the same steps: its left side L² ‖θ^1 − θ^0‖² = 6.25 L² needs no gradient. At L = 2 it is
// 25 = R^1, and a tie uploads; at L = 1.5 it is 14.0625 and both ranks skip.
TEST(LasgRules, PsUsesTheSmoothnessBoundAndTiesUpload) {
  for (const double smoothness : {2.0, 1.5}) {
    CountedGradients counted;
    const auto out = train(
        2, "lasg", "{rule: ps, history: 1, xi: 1, smoothness: " + std::to_string(smoothness) + "}",
        2, ones2, counted.grads(), 0.5);
    for (const auto& s : out) {
      EXPECT_EQ(s[1].stats.at("lasg_change"), 6.25 * smoothness * smoothness);
      EXPECT_EQ(s[1].stats.at("uploads"), smoothness == 2.0 ? 2 : 0) << smoothness;
      if (smoothness == 1.5) {
        EXPECT_TRUE(torch::equal(s[1].grads[0], torch::tensor({3.0f, 4.0f})));
      }
    }
    EXPECT_EQ(counted.calls[0].load(), 2) << "PS asks for no second gradient";
  }
}

// A stream whose minibatch gradient does not depend on θ: the gradient of the same batch at θ^k
// and at θ̂_m is the same, and gradients of different batches differ by their noise.
std::vector<NamedTensor> layer() {
  auto gen = make_generator(5, 0, 0);
  return {{"layer.weight", torch::randn({12, 10}, gen)}, {"layer.bias", torch::randn({30}, gen)}};
}
constexpr int64_t kLayerValues = 12 * 10 + 30;

std::vector<at::Tensor> noise_only(int r, int64_t k, const std::vector<NamedTensor>& p) {
  std::vector<at::Tensor> g;
  for (size_t i = 0; i < p.size(); ++i)
    g.push_back(torch::randn(p[i].tensor.sizes(), make_generator(77, r, k, i)));
  return g;
}

TEST(LasgRules, NoiseAloneDoesNotUploadWhereLagUploadsEveryStep) {
  const int ranks = 3, steps = 10;
  const auto lasg = train(ranks, "lasg", "{}", steps, layer, noise_only, 0.1);
  const auto lag = train(ranks, "lag", "{}", steps, layer, noise_only, 0.1);
  for (int r = 0; r < ranks; ++r)
    for (int k = 0; k < steps; ++k) {
      const auto& s = lasg[static_cast<size_t>(r)][static_cast<size_t>(k)];
      const auto& l = lag[static_cast<size_t>(r)][static_cast<size_t>(k)];
      EXPECT_EQ(l.stats.at("uploads"), ranks) << "LAG, step " << k;
      EXPECT_EQ(s.stats.at("uploads"), k == 0 ? ranks : 0) << "LASG, step " << k;
      if (k > 0) {
        EXPECT_EQ(s.stats.at("lasg_change"), 0.0);
      }
      // Bytes from the format: the allgatherv's 8-byte length, and 4 bytes per value uploaded.
      EXPECT_EQ(l.comm.payload_bytes, 8 + 4 * kLayerValues);
      EXPECT_EQ(s.comm.payload_bytes, 8 + (k == 0 ? 4 * kLayerValues : 0)) << "step " << k;
      // Nobody uploads: the aggregate of step 0 is applied again.
      for (size_t i = 0; i < s.grads.size(); ++i)
        EXPECT_TRUE(torch::equal(s.grads[i], lasg[0][0].grads[i]));
    }
}

TEST(LasgRules, AStaleRankUploadsAfterMaxDelaySteps) {
  const auto out = train(2, "lasg", "{max_delay: 3}", 8, layer, noise_only, 0.1);
  for (const auto& rank : out)
    for (int k = 0; k < 8; ++k) {
      EXPECT_EQ(rank[static_cast<size_t>(k)].stats.at("uploads"), k % 3 == 0 ? 2 : 0) << k;
      EXPECT_EQ(rank[static_cast<size_t>(k)].stats.at("lasg_delay"), k == 0 ? 1 : (k - 1) % 3 + 1);
    }
}

// Without a second pass offered (a caller that has no model), WK2 cannot compare and uploads.
TEST(LasgRules, Wk2WithoutASecondPassUploads) {
  LocalCommunicator comm;
  auto alg = make_algorithm("lasg");
  auto params = layer();
  alg->setup(params, comm);
  for (int64_t k = 0; k < 3; ++k) {
    GradBucket b = testing::bucket_of_params(params);
    const auto g = noise_only(0, k, params);
    for (size_t i = 0; i < g.size(); ++i) b.entries[i].grad.copy_(g[i]);
    StepContext ctx;
    ctx.step = k;
    ctx.lr = 0.1;
    alg->reduce_gradients(b, comm, ctx);
    EXPECT_EQ(ctx.stats.at("lasg_uploaded"), 1) << k;
    EXPECT_TRUE(torch::allclose(b.entries[0].grad, g[0], 1e-6, 1e-6)) << "its fresh gradient";
    for (size_t i = 0; i < params.size(); ++i) params[i].tensor.sub_(b.entries[i].grad, 0.1);
    alg->after_step(params, {}, comm, ctx);
  }
}

// Rank r's gradient on batch (r, k) at θ: c_r θ + noise (c = 0.02, 0.3, 1, 4): how far the same
// batch's gradient moves with θ grows with r, so some ranks skip and others upload.
std::vector<at::Tensor> curved(int r, int64_t k, const std::vector<NamedTensor>& p) {
  static const float c[] = {0.02f, 0.3f, 1.0f, 4.0f};
  std::vector<at::Tensor> g = noise_only(r, k, p);
  for (size_t i = 0; i < p.size(); ++i) g[i] = c[r] * p[i].tensor + g[i];
  return g;
}

double squared(const at::Tensor& t) { return t.to(torch::kDouble).square().sum().item<double>(); }
at::Tensor flat(const std::vector<at::Tensor>& parts) {
  std::vector<at::Tensor> f;
  for (const auto& t : parts) f.push_back(t.reshape({-1}));
  return torch::cat(f);
}
std::vector<NamedTensor> named(const at::Tensor& flat_theta) {
  return {{"layer.weight", flat_theta.narrow(0, 0, 120).view({12, 10})},
          {"layer.bias", flat_theta.narrow(0, 120, 30)}};
}

// 4 ranks, 12 steps, D = 3, ξ = 1, max_delay 4, the learning rate halved at step 6: every
// decision, threshold and byte count against a replay of the rule written here from the
// trajectory (θ̂_m the θ of rank m's last upload, R^k from the moves each divided by its own rate
// squared), the ranks' updates bitwise equal, and the update the average of the last uploads.
void expect_the_replay(const std::string& rule) {
  const int ranks = 4, steps = 12;
  auto lr_at = [](int64_t k) { return k < 6 ? 0.1 : 0.05; };
  const auto out = testing::on_ranks(ranks, [&](Communicator& comm) {
    auto alg =
        make_algorithm("lasg", "{rule: " + rule + ", history: 3, max_delay: 4, smoothness: 6}");
    auto params = layer();
    alg->setup(params, comm);
    testing::StepOptions options;
    options.lr_schedule = lr_at;
    return testing::train_steps(*alg, params, comm, 0, steps, curved, options);
  });
  std::vector<at::Tensor> theta_hat(ranks), last(ranks);
  std::vector<int> delay(ranks, 0);
  std::deque<double> moves;
  at::Tensor theta = flat({layer()[0].tensor, layer()[1].tensor});
  int skips = 0, uploads_after_first = 0;
  for (int k = 0; k < steps; ++k) {
    double sum = 0;
    for (double m : moves) sum += m;
    const double threshold = sum / 3;
    int count = 0;
    for (int r = 0; r < ranks; ++r) {
      const auto& s = out[static_cast<size_t>(r)][static_cast<size_t>(k)];
      const at::Tensor g = flat(curved(r, k, named(theta)));
      ++delay[static_cast<size_t>(r)];
      bool up = k == 0 || delay[static_cast<size_t>(r)] >= 4;
      if (!up) {
        const at::Tensor& hat = theta_hat[static_cast<size_t>(r)];
        const double change =
            rule == "wk2" ? squared(g - flat(curved(r, k, named(hat)))) : 36 * squared(theta - hat);
        EXPECT_NEAR(s.stats.at("lasg_change"), change, 1e-9 * change)
            << rule << " " << r << " " << k;
        up = change >= threshold;
      }
      EXPECT_EQ(s.stats.at("lasg_uploaded"), up ? 1 : 0) << rule << " rank " << r << " step " << k;
      EXPECT_NEAR(s.stats.at("lasg_threshold"), threshold, 1e-12 * (1 + threshold));
      EXPECT_EQ(s.comm.payload_bytes, 8 + (up ? 4 * kLayerValues : 0));
      if (up) {
        theta_hat[static_cast<size_t>(r)] = theta.clone();
        last[static_cast<size_t>(r)] = g;
        delay[static_cast<size_t>(r)] = 0;
        uploads_after_first += k > 0;
      }
      skips += !up;
      count += up;
      EXPECT_TRUE(torch::equal(flat(s.grads), flat(out[0][static_cast<size_t>(k)].grads)))
          << "ranks disagree at step " << k;
    }
    const at::Tensor mean = (last[0] + last[1] + last[2] + last[3]) / ranks;
    EXPECT_TRUE(torch::allclose(flat(out[0][static_cast<size_t>(k)].grads), mean, 1e-5, 1e-6))
        << rule << " step " << k;
    EXPECT_EQ(out[0][static_cast<size_t>(k)].stats.at("uploads"), count);
    const at::Tensor next = flat(out[0][static_cast<size_t>(k)].params);
    moves.push_front(squared(next - theta) / (lr_at(k) * lr_at(k)));
    if (moves.size() > 3) moves.pop_back();
    theta = next;
  }
  EXPECT_GT(skips, 0) << rule;
  EXPECT_GT(uploads_after_first, 0) << rule;
}

TEST(LasgRanks, Wk2DecisionsAndAggregatesFollowTheReplay) { expect_the_replay("wk2"); }
TEST(LasgRanks, PsDecisionsAndAggregatesFollowTheReplay) { expect_the_replay("ps"); }

// ξ = 0 (the lossless setting): every rank uploads every step under either rule, and the updates
// are dense SGD's average up to the rounding of the running aggregate.
TEST(LasgRanks, AtXiZeroEveryStepUploadsAndTrainsAsDenseSgd) {
  const auto dense = train(4, "dense", "{}", 10, layer, curved, 0.1);
  for (const std::string yaml : {"{xi: 0}", "{rule: ps, xi: 0}"}) {
    const auto lasg = train(4, "lasg", yaml, 10, layer, curved, 0.1);
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 10; ++k) {
        const auto& s = lasg[static_cast<size_t>(r)][static_cast<size_t>(k)];
        EXPECT_EQ(s.stats.at("uploads"), 4) << yaml << " step " << k;
        EXPECT_EQ(s.stats.count("lasg_change"), 0u) << "R = 0 decides without the rule";
        EXPECT_TRUE(torch::allclose(
            flat(s.params), flat(dense[static_cast<size_t>(r)][static_cast<size_t>(k)].params),
            1e-5, 1e-6))
            << yaml << " rank " << r << " step " << k;
      }
  }
}

// Stopped after 5 steps and resumed from the saved state: the rest is bitwise the uninterrupted
// run, over steps where ranks skip (so the decisions depend on the saved θ̂_m and delays).
TEST(LasgRanks, ResumingFromTheSavedStateIsBitwiseWhereRanksSkip) {
  for (const std::string rule : {"wk2", "ps"}) {
    const std::string yaml = "{rule: " + rule + ", history: 3, smoothness: 6}";
    std::mutex mu;
    int skips_after_resume = 0;
    run_ranks(4, [&](Communicator& comm) {
      auto whole = make_algorithm("lasg", yaml);
      auto params = layer();
      whole->setup(params, comm);
      const auto expected = testing::train_steps(*whole, params, comm, 0, 10, curved);
      auto first = make_algorithm("lasg", yaml);
      auto params2 = layer();
      first->setup(params2, comm);
      testing::train_steps(*first, params2, comm, 0, 5, curved);
      AlgorithmState state;
      first->save_state(state);
      auto second = make_algorithm("lasg", yaml);
      std::vector<NamedTensor> restored;
      for (const auto& p : params2) restored.push_back({p.name, p.tensor.clone()});
      second->setup(restored, comm);
      second->load_state(state);
      const auto resumed = testing::train_steps(*second, restored, comm, 5, 10, curved);
      std::lock_guard<std::mutex> lock(mu);
      for (size_t k = 0; k < resumed.size(); ++k) {
        EXPECT_TRUE(testing::same_bits(flat(resumed[k].params), flat(expected[k + 5].params)))
            << rule << " rank " << comm.rank() << " step " << k + 5;
        EXPECT_EQ(resumed[k].stats.at("lasg_uploaded"), expected[k + 5].stats.at("lasg_uploaded"));
        skips_after_resume += resumed[k].stats.at("lasg_uploaded") == 0;
      }
    });
    EXPECT_GT(skips_after_resume, 0) << rule;
  }
}

}  // namespace
}  // namespace cedar
