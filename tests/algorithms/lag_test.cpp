// LAG-WK (Chen et al. 2018): the upload rule on a hand-computed case (skip at equality, upload
// above), zero gradient bytes for a skipped upload, the aggregate formula and the uploads count
// against a reference replay on 4 ranks, and the fused CPU step against the LibTorch expressions
// of the rule: the same decisions and bit-identical aggregates.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/compressor.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {

namespace {

using testing::bucket_of_params;
using testing::make_algorithm;

TEST(Lag, HandComputedSkipAndUpload) {
  // D = 1, xi = 1, lr 0.5: threshold = ||theta^1 - theta^0||^2 / lr^2 = 0.0625 / 0.25 = 0.25.
  // Step 1: rank 0 changed by [0.5, 0] (0.25: not above, skip), rank 1 by [0.5, 0.125]
  // (0.265625: upload). Every number is exact in binary floating point.
  const float g0[2][2] = {{1, 2}, {3, 4}};
  const float g1[2][2] = {{1.5f, 2}, {3.5f, 4.125f}};
  run_ranks(2, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    auto alg = make_algorithm("lag", "{history: 1, xi: 1}");
    std::vector<NamedTensor> params = {{"w", torch::ones({2})}};
    alg->setup(params, comm);
    auto b = bucket_of_params({params[0]}, 0);

    StepContext ctx;
    ctx.lr = 0.5;
    b.flat.copy_(torch::tensor({g0[r][0], g0[r][1]}));
    comm.reset_step();
    alg->reduce_gradients(b, comm, ctx);
    EXPECT_TRUE(torch::equal(b.flat, torch::tensor({2.0f, 3.0f})));  // first step: everyone
    EXPECT_EQ(ctx.stats.at("uploads"), 2);
    EXPECT_EQ(comm.step().payload_bytes, 8 + 8);  // count + 2 floats
    params[0].tensor.copy_(torch::tensor({1.25f, 1.0f}));
    alg->after_step(params, {}, comm, ctx);

    StepContext ctx1;
    ctx1.step = 1;
    ctx1.lr = 0.5;
    b.flat.copy_(torch::tensor({g1[r][0], g1[r][1]}));
    comm.reset_step();
    alg->reduce_gradients(b, comm, ctx1);
    EXPECT_EQ(ctx1.stats.at("lag_threshold"), 0.25);
    EXPECT_EQ(ctx1.stats.at("lag_change"), r == 0 ? 0.25 : 0.265625);
    EXPECT_EQ(ctx1.stats.at("lag_uploaded"), r == 0 ? 0 : 1);
    EXPECT_EQ(ctx1.stats.at("uploads"), 1);
    // Aggregate: [2, 3] + [0.5, 0.125] / 2 on every rank.
    EXPECT_TRUE(torch::equal(b.flat, torch::tensor({2.25f, 3.0625f})));
    // The skipping rank sends no gradient bytes: only the allgatherv's 8-byte length.
    EXPECT_EQ(comm.step().payload_bytes, r == 0 ? 8 : 8 + 8);
    alg->after_step(params, {}, comm, ctx1);  // theta did not move: threshold 0 next

    StepContext ctx2;
    ctx2.step = 2;
    ctx2.lr = 0.5;
    b.flat.copy_(torch::tensor({g1[r][0], g1[r][1]}));
    alg->reduce_gradients(b, comm, ctx2);
    EXPECT_EQ(ctx2.stats.at("lag_threshold"), 0.0);
    // Rank 0's gradient moved by 0.25 since its last upload (0.25 > 0: upload); rank 1's did not.
    EXPECT_EQ(ctx2.stats.at("lag_uploaded"), r == 0 ? 1 : 0);
    EXPECT_TRUE(torch::equal(b.flat, torch::tensor({2.5f, 3.0625f})));
  });
}

TEST(Lag, HistoryWeightsTheLastDMoves) {
  // D = 2, xi = 0.5, lr 1: after moves of 9, 4 and 1 only the last two count:
  // threshold = 0.5/2 * (1 + 4).
  LocalCommunicator comm;
  auto alg = make_algorithm("lag", "{history: 2, xi: 0.5}");
  std::vector<NamedTensor> params = {{"w", torch::zeros({1})}};
  alg->setup(params, comm);
  auto b = bucket_of_params({params[0]}, 0);
  for (float to : {3.0f, 5.0f, 4.0f}) {  // moves 9, 4, 1
    StepContext ctx;
    ctx.lr = 1;
    alg->reduce_gradients(b, comm, ctx);
    params[0].tensor.fill_(to);
    alg->after_step(params, {}, comm, ctx);
  }
  StepContext ctx;
  ctx.lr = 1;
  alg->reduce_gradients(b, comm, ctx);
  EXPECT_DOUBLE_EQ(ctx.stats.at("lag_threshold"), 0.25 * (4 + 1));
}

// Runs LAG (D = 3, ξ = 1) on 4 ranks for `steps` steps at the learning rates lr_at(k), applying
// plain SGD with the aggregate, and checks every decision, threshold, byte count and aggregate
// against a replay of the paper's rule written here: each past move divided by the square of the
// rate it was made with. Returns the uploads (after the first step) at steps >= count_from.
int check_against_replay(int steps, const std::function<double(int)>& lr_at, int count_from) {
  const int n = 4;
  // Rank r's gradient drifts with scale s[r]: rank 0 never changes (skips after the first step),
  // rank 3 changes a lot (uploads).
  const float scale[n] = {0.0f, 0.02f, 0.5f, 2.0f};
  auto grad = [&](int r, int k, int64_t numel, uint64_t stream) {
    at::Tensor base = at::randn({numel}, make_generator(3, r, 0, stream));
    return base + scale[r] * at::randn({numel}, make_generator(3, r, k + 1, stream));
  };
  struct Log {
    std::vector<at::Tensor> agg;
    std::vector<double> uploaded, uploads, threshold;
    std::vector<int64_t> payload;
  };
  std::vector<Log> logs(n);
  std::mutex mu;
  run_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    auto alg = make_algorithm("lag", "{history: 3, xi: 1}");
    std::vector<NamedTensor> params = {{"a", torch::ones({5})}, {"b", torch::ones({3})}};
    alg->setup(params, comm);
    // Two buckets, in the trainer's reverse order: bucket 0 holds "b", bucket 1 holds "a".
    std::vector<GradBucket> buckets = {bucket_of_params({params[1]}, 0),
                                       bucket_of_params({params[0]}, 1)};
    Log log;
    for (int k = 0; k < steps; ++k) {
      buckets[0].flat.copy_(grad(r, k, 3, 1));
      buckets[1].flat.copy_(grad(r, k, 5, 0));
      StepContext ctx;
      ctx.step = k;
      ctx.lr = lr_at(k);
      comm.reset_step();
      for (auto& b : buckets) alg->reduce_gradients(b, comm, ctx);
      log.agg.push_back(torch::cat({buckets[0].flat, buckets[1].flat}));
      log.uploaded.push_back(ctx.stats.at("lag_uploaded"));
      log.uploads.push_back(ctx.stats.at("uploads"));
      log.threshold.push_back(ctx.stats.at("lag_threshold"));
      log.payload.push_back(comm.step().payload_bytes);
      params[0].tensor.sub_(buckets[1].flat, ctx.lr);  // plain SGD with the aggregate
      params[1].tensor.sub_(buckets[0].flat, ctx.lr);
      alg->after_step(params, {}, comm, ctx);
    }
    std::lock_guard<std::mutex> lock(mu);
    logs[r] = log;
  });

  // Reference replay: last uploads, the threshold from the parameter trajectory, the decisions.
  std::vector<at::Tensor> last(n, torch::zeros({8}));
  at::Tensor theta = torch::ones({8}), prev = theta.clone();
  std::vector<double> moves;  // ‖θ^{j+1} − θ^j‖² / η_j², step j
  int skips = 0, ups = 0, late_ups = 0;
  for (int k = 0; k < steps; ++k) {
    double sum = 0;
    for (size_t d = 0; d < moves.size() && d < 3; ++d) sum += moves[moves.size() - 1 - d];
    double thr = 1.0 / 3 * sum;
    int count = 0;
    for (int r = 0; r < n; ++r) {
      at::Tensor g = torch::cat({grad(r, k, 3, 1), grad(r, k, 5, 0)});
      double change = (g - last[r]).to(torch::kDouble).square().sum().item<double>();
      bool up = k == 0 || change > thr;
      EXPECT_EQ(logs[r].uploaded[k], up ? 1 : 0) << "rank " << r << " step " << k;
      EXPECT_NEAR(logs[r].threshold[k], thr, 1e-6 * (1 + thr));
      EXPECT_EQ(logs[r].payload[k], 8 + (up ? 4 * 8 : 0));
      if (up) last[r] = g;
      count += up;
      (up ? ups : skips) += k > 0;
      late_ups += up && k > 0 && k >= count_from;
    }
    at::Tensor mean = (last[0] + last[1] + last[2] + last[3]) / n;  // the aggregate, telescoped
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(logs[r].uploads[k], count);
      EXPECT_TRUE(torch::equal(logs[r].agg[k], logs[0].agg[k])) << "ranks disagree at " << k;
    }
    EXPECT_TRUE(torch::allclose(logs[0].agg[k], mean, 1e-5, 1e-6)) << "step " << k;
    const double lr = lr_at(k);
    theta.sub_(logs[0].agg[k], lr);
    moves.push_back((theta - prev).to(torch::kDouble).square().sum().item<double>() / (lr * lr));
    prev = theta.clone();
  }
  EXPECT_GT(skips, 0);
  EXPECT_GT(ups, 0);
  return late_ups;
}

TEST(Lag, AggregateIsTheFormulaAndRanksAgreeOnFourRanks) {
  check_against_replay(
      8, [](int) { return 0.1; }, 0);
}

// A 10x step decay of the learning rate at step 4: the moves made at 0.1 keep their weight, so
// the workers whose gradients change keep uploading right after the decay (dividing the old moves
// by the new rate squared made the threshold 100x larger and silenced everyone for D steps).
TEST(Lag, UploadDecisionsAcrossATenfoldLearningRateDecayFollowThePapersRule) {
  const int uploads_after_decay = check_against_replay(
      10, [](int k) { return k < 4 ? 0.1 : 0.01; }, 4);
  EXPECT_GT(uploads_after_decay, 0);
}

// P ranks, 12 steps with a tenfold decay at step 6, two buckets of odd sizes, rank gradients
// drifting from not at all to a lot. Replayed with the LibTorch expressions of the rule (g − g^,
// its squared norm in fp64, zeros + the uploads in rank order, / P, added to the aggregate; the
// moves as (θ − θ_prev) squared and summed): every decision and upload count is the same and every
// aggregate and parameter the same bits; the squared norms, summed in another order, agree to
// rounding.
void expect_the_tensor_expressions(const int P) {
  const int steps = 12;
  const float drift[] = {0.0f, 0.05f, 1.0f, 0.3f};
  auto lr_at = [](int k) { return k < 6 ? 0.1 : 0.01; };
  auto grad = [&](int r, int k, int64_t numel, uint64_t stream) {
    at::Tensor base = at::randn({numel}, make_generator(5, r, 0, stream));
    return base + drift[r] * at::randn({numel}, make_generator(5, r, k + 1, stream));
  };
  struct Log {
    std::vector<at::Tensor> agg, params;
    std::vector<double> uploaded, uploads, threshold, change;
  };
  std::vector<Log> logs(P);
  std::mutex mu;
  run_ranks(P, [&](Communicator& comm) {
    const int r = comm.rank();
    auto alg = make_algorithm("lag", "{history: 3, xi: 1}");
    std::vector<NamedTensor> params = {{"a", torch::ones({1003})}, {"b", torch::ones({77})}};
    alg->setup(params, comm);
    std::vector<GradBucket> buckets = {bucket_of_params({params[1]}, 0),
                                       bucket_of_params({params[0]}, 1)};
    Log log;
    for (int k = 0; k < steps; ++k) {
      buckets[0].flat.copy_(grad(r, k, 77, 1));
      buckets[1].flat.copy_(grad(r, k, 1003, 0));
      StepContext ctx;
      ctx.step = k;
      ctx.lr = lr_at(k);
      for (auto& b : buckets) alg->reduce_gradients(b, comm, ctx);
      log.agg.push_back(torch::cat({buckets[0].flat, buckets[1].flat}));
      log.uploaded.push_back(ctx.stats.at("lag_uploaded"));
      log.uploads.push_back(ctx.stats.at("uploads"));
      log.threshold.push_back(ctx.stats.at("lag_threshold"));
      log.change.push_back(ctx.stats.at("lag_change"));
      params[0].tensor.sub_(buckets[1].flat, ctx.lr);
      params[1].tensor.sub_(buckets[0].flat, ctx.lr);
      log.params.push_back(torch::cat({params[1].tensor, params[0].tensor}));
      alg->after_step(params, {}, comm, ctx);
    }
    std::lock_guard<std::mutex> lock(mu);
    logs[r] = log;
  });

  std::vector<at::Tensor> last;
  for (int r = 0; r < P; ++r) last.push_back(torch::zeros({1080}));
  at::Tensor aggregate = torch::zeros({1080});
  at::Tensor a = torch::ones({1003}), b = torch::ones({77});
  at::Tensor prev_a = a.clone(), prev_b = b.clone();
  std::deque<double> moves;
  int skips = 0;
  for (int k = 0; k < steps; ++k) {
    double sum_moves = 0;
    for (double m : moves) sum_moves += m;
    const double threshold = 1.0 / 3 * sum_moves;
    at::Tensor sum = torch::zeros({1080});
    std::vector<at::Tensor> g(P);
    int uploads = 0;
    for (int r = 0; r < P; ++r) {
      g[r] = torch::cat({grad(r, k, 77, 1), grad(r, k, 1003, 0)});
      const at::Tensor delta = g[r] - last[r];
      const double change = delta.to(at::kDouble).square().sum().item<double>();
      const bool up = k == 0 || change > threshold;
      EXPECT_EQ(logs[r].uploaded[k], up ? 1 : 0) << "rank " << r << " step " << k;
      EXPECT_NEAR(logs[r].change[k], change, 1e-12 * change) << "rank " << r << " step " << k;
      EXPECT_NEAR(logs[r].threshold[k], threshold, 1e-12 * threshold) << "step " << k;
      if (up) {
        sum.add_(delta);
        ++uploads;
      }
      skips += !up;
    }
    aggregate.add_(sum.div_(static_cast<double>(P)));
    for (int r = 0; r < P; ++r) {
      if (logs[r].uploaded[k] == 1) last[r].copy_(g[r]);
      EXPECT_EQ(logs[r].uploads[k], uploads) << "step " << k;
      EXPECT_TRUE(testing::same_bits(logs[r].agg[k], aggregate)) << "rank " << r << " step " << k;
    }
    const double lr = lr_at(k);
    a.sub_(aggregate.narrow(0, 77, 1003), lr);
    b.sub_(aggregate.narrow(0, 0, 77), lr);
    EXPECT_TRUE(testing::same_bits(logs[0].params[k], torch::cat({b, a}))) << "step " << k;
    const double moved = (a - prev_a).to(at::kDouble).square().sum().item<double>() +
                         (b - prev_b).to(at::kDouble).square().sum().item<double>();
    prev_a = a.clone();
    prev_b = b.clone();
    moves.push_front(moved / (lr * lr));
    if (moves.size() > 3) moves.pop_back();
  }
  EXPECT_GT(skips, 0);
}

// A step where nobody uploads: every bucket gets ∇ + 0 (the rule's ∇ + (0 + no Δ)/P), which is
// ∇ bit for bit except that −0 becomes +0, and ∇ keeps that value too. ∇ holds a −0 only when a
// checkpoint brings one, so the state is loaded here with −0, +0, a NaN and ordinary values.
TEST(Lag, WhenNobodyUploadsTheBucketGetsTheAggregatePlusZero) {
  run_ranks(2, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto alg =
        make_algorithm("lag", "{history: 1, xi: 1.0e30}");  // every step after the first skips
    std::vector<NamedTensor> params = {{"w", torch::ones({6})}};
    alg->setup(params, comm);
    auto b = bucket_of_params({params[0]}, 0);
    StepContext ctx;
    ctx.lr = 0.5;
    b.flat.copy_(torch::arange(6, torch::kFloat));
    alg->reduce_gradients(b, comm, ctx);  // the first step uploads
    params[0].tensor.sub_(0.5);
    alg->after_step(params, {}, comm, ctx);

    AlgorithmState state;
    alg->save_state(state);
    const at::Tensor aggregate =
        torch::tensor({-0.0f, 0.0f, NAN, -1.5f, 3.25e-40f, 7.0f}, torch::kFloat);
    state["aggregate"] = aggregate.clone();
    alg->load_state(state);

    StepContext ctx1;
    ctx1.step = 1;
    ctx1.lr = 0.5;
    b.flat.copy_(torch::full({6}, 100.0f));
    alg->reduce_gradients(b, comm, ctx1);
    EXPECT_EQ(ctx1.stats.at("uploads"), 0);
    const at::Tensor want = aggregate + torch::zeros({6});  // the tensor expression of the rule
    EXPECT_TRUE(torch::equal(b.flat.view(torch::kInt32), want.view(torch::kInt32)))
        << b.flat << " against " << want;
    AlgorithmState after;
    alg->save_state(after);
    EXPECT_TRUE(torch::equal(after.at("aggregate").view(torch::kInt32), want.view(torch::kInt32)))
        << "the aggregate keeps the value the bucket got";
  });
}

TEST(Lag, StepsAreTheTensorExpressionsOfTheRule) {
  expect_the_tensor_expressions(3);  // the average divides
  expect_the_tensor_expressions(4);  // the average scales by 1/4
}

}  // namespace
}  // namespace cedar
