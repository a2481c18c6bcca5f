// Top-k sparsification with error feedback (Stich et al. 2018): the codec keeps exactly the k
// largest magnitudes in 8 bytes per kept value, an oracle of the paper's rule over steps whose
// learning rate changes, plain top-k without memory, the dense average at ratio 1, multi-rank
// agreement and metered bytes, and the parameters; scope: global against torch::topk over the
// concatenated model, its bytes, and its refusal of a model spread over several buckets.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/topk_codec.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/bus_bytes.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::bucket_of_shapes;
using testing::make_algorithm;
using testing::randn_seeded;
using testing::topk_dense;

TEST(TopKCompressor, SelectsExactTopKAndFixedSize) {
  auto x = randn_seeded(1000, 3);
  TopKCompressor c(0.05);
  auto gen = make_generator(0, 0, 0);
  EXPECT_EQ(c.payload_bytes(1000), 8 * 50);
  auto payload = c.compress(x, gen);
  EXPECT_EQ(payload.numel(), 8 * 50);
  EXPECT_TRUE(torch::equal(c.decompress(payload, 1000), topk_dense(x, 50)));
}

// Oracle: the paper's rule in units of the step (m <- m + η·g − top_k(m + η·g), w <- w −
// top_k(...)) against the algorithm's output times η, over steps whose learning rate changes.
TEST(TopKAlgorithm, OracleOfThePaperRuleWithChangingLr) {
  auto algo = make_algorithm("topk", "{ratio: 0.05}");
  LocalCommunicator local;
  MeteredCommunicator comm(local);
  auto bucket = bucket_of_shapes({{20, 30}, {40}});
  std::vector<int64_t> k = {30, 2};
  std::vector<torch::Tensor> m = {torch::zeros({600}), torch::zeros({40})};
  const double lrs[] = {0.1, 0.1, 0.05, 0.05, 0.2};
  for (int step = 0; step < 5; ++step) {
    StepContext ctx;
    ctx.step = step;
    ctx.lr = lrs[step];
    std::vector<torch::Tensor> g;
    for (size_t i = 0; i < 2; ++i) {
      g.push_back(randn_seeded(bucket.entries[i].grad.numel(), 100 * step + i));
      bucket.entries[i].grad.copy_(g[i].view(bucket.entries[i].grad.sizes()));
    }
    algo->reduce_gradients(bucket, comm, ctx);
    for (size_t i = 0; i < 2; ++i) {
      auto p = m[i] + lrs[step] * g[i];
      auto sent = topk_dense(p, k[i]);
      m[i] = p - sent;
      auto out = bucket.entries[i].grad.reshape({-1}) * lrs[step];
      EXPECT_TRUE(torch::allclose(out, sent, 1e-5, 1e-7)) << "step " << step << " tensor " << i;
      EXPECT_EQ(out.ne(0).sum().item<int64_t>(), k[i]);
    }
    EXPECT_EQ(ctx.stats["topk.payload_bytes"], 8 * (30 + 2));
  }
}

TEST(TopKAlgorithm, WithoutErrorFeedbackIsPlainTopK) {
  auto algo = make_algorithm("topk", "{ratio: 0.1, error_feedback: false}");
  LocalCommunicator local;
  auto bucket = bucket_of_shapes({{100}});
  for (int step = 0; step < 3; ++step) {
    auto g = randn_seeded(100, 40 + step);
    bucket.entries[0].grad.copy_(g);
    StepContext ctx;
    ctx.lr = 0.1;
    algo->reduce_gradients(bucket, local, ctx);
    EXPECT_TRUE(torch::equal(bucket.entries[0].grad, topk_dense(g, 10)));
  }
}

// k = d: every coordinate is sent, nothing is left in the memory, and each step's update is the
// average of the ranks' gradients, in 8 bytes (index and value) per coordinate.
TEST(TopKAlgorithm, RatioOneOnThreeRanksIsTheDenseAverage) {
  const int n = 3;
  auto grads_of = [](int r, int64_t t) {
    return std::vector<at::Tensor>{randn_seeded(24, 10 * t + r).view({4, 6}),
                                   randn_seeded(5, 100 + 10 * t + r)};
  };
  auto res = testing::run_steps(n, "topk", "{ratio: 1}", 3, grads_of);
  testing::expect_ranks_agree(res);
  for (int64_t t = 0; t < 3; ++t) {
    for (size_t i = 0; i < 2; ++i) {
      at::Tensor mean = torch::zeros_like(grads_of(0, t)[i]);
      for (int r = 0; r < n; ++r) mean += grads_of(r, t)[i];
      mean /= n;
      EXPECT_TRUE(torch::allclose(res[0][t].grads[i], mean, 1e-6, 1e-6))
          << "step " << t << " tensor " << i;
    }
    EXPECT_EQ(res[0][t].comm.payload_bytes, 8 * (24 + 5));
  }
}

// Every rank ends with the same average of the ranks' top-k (first step: e = 0), and the
// metered bytes are one allgather of 8·Σk.
class TopKRanks : public ::testing::TestWithParam<int> {};

TEST_P(TopKRanks, AgreeAndCountBytes) {
  const int n = GetParam();
  auto results = testing::on_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make_algorithm("topk", "{ratio: 0.01}");
    auto bucket = bucket_of_shapes({{64, 3, 3, 3}, {10, 64}, {64}});  // 1728 + 640 + 64
    bucket.flat.copy_(randn_seeded(bucket.flat.numel(), 1000 + comm.rank()));
    StepContext ctx;
    ctx.lr = 0.1;
    algo->reduce_gradients(bucket, comm, ctx);
    const int64_t bytes = 8 * (18 + 7 + 1);
    EXPECT_EQ(ctx.stats["topk.payload_bytes"], bytes);
    EXPECT_EQ(comm.step().payload_bytes, n > 1 ? bytes : 0);
    EXPECT_EQ(comm.step().bus_bytes, allgather_bus_bytes(bytes * n, n));
    EXPECT_EQ(comm.step().calls, 1);
    return bucket.flat.clone();
  });
  std::vector<int64_t> sizes = {1728, 640, 64}, ks = {18, 7, 1};
  auto expect = torch::zeros({1728 + 640 + 64});
  for (int r = 0; r < n; ++r) {
    auto g = randn_seeded(expect.numel(), 1000 + r);
    int64_t off = 0;
    for (size_t i = 0; i < 3; ++i) {
      expect.narrow(0, off, sizes[i]).add_(topk_dense(g.narrow(0, off, sizes[i]), ks[i]) / n);
      off += sizes[i];
    }
  }
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(torch::equal(results[r], results[0])) << "rank " << r;
    EXPECT_TRUE(torch::allclose(results[r], expect, 1e-6, 1e-7));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TopKRanks, ::testing::Values(1, 2, 4));

// ---------------------------------------------------------------- scope: global

// scope: global against the paper's rule once over the concatenation of the model's gradients,
// selected by torch::topk (the oracle), in units of the step over steps whose learning rate
// changes: k = ⌈0.05·640⌉ = 32 model-wide. The second tensor's gradients are 10x larger, so it
// sends more than its layer share (2 of 40) and the first less than its 30 of 600.
TEST(TopKGlobalScope, OracleIsTorchTopKOverTheConcatenation) {
  auto algo = make_algorithm("topk", "{ratio: 0.05, scope: global}");
  LocalCommunicator local;
  MeteredCommunicator comm(local);
  auto bucket = bucket_of_shapes({{20, 30}, {40}});
  std::vector<NamedTensor> params;
  for (const auto& e : bucket.entries) params.push_back({e.name, e.param});
  algo->setup(params, comm);
  const int64_t k = 32;
  torch::Tensor m = torch::zeros({640});
  const double lrs[] = {0.1, 0.1, 0.05, 0.05, 0.2};
  for (int step = 0; step < 5; ++step) {
    StepContext ctx;
    ctx.step = step;
    ctx.lr = lrs[step];
    const torch::Tensor g =
        torch::cat({randn_seeded(600, 100 * step), 10 * randn_seeded(40, 100 * step + 1)});
    bucket.flat.copy_(g);
    algo->reduce_gradients(bucket, comm, ctx);
    const torch::Tensor p = m + lrs[step] * g;
    const torch::Tensor sent = topk_dense(p, k);
    m = p - sent;
    const torch::Tensor out = bucket.flat * lrs[step];
    EXPECT_TRUE(torch::allclose(out, sent, 1e-5, 1e-7)) << "step " << step;
    EXPECT_TRUE(torch::equal(out.ne(0), sent.ne(0))) << "step " << step;
    EXPECT_GT(out.narrow(0, 600, 40).ne(0).sum().item<int64_t>(), 2) << "step " << step;
    EXPECT_EQ(ctx.stats["topk.payload_bytes"], 8 * k);
  }
}

class TopKGlobalRanks : public ::testing::TestWithParam<int> {};

// Every rank ends with the average of the ranks' model-wide top-k (first step: e = 0), in one
// allgather of 8·⌈0.01·2432⌉ = 8·25 bytes per rank (layer scope: 8·(18 + 7 + 1)).
TEST_P(TopKGlobalRanks, AgreeAndCountBytes) {
  const int n = GetParam();
  auto results = testing::on_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make_algorithm("topk", "{ratio: 0.01, scope: global}");
    auto bucket = bucket_of_shapes({{64, 3, 3, 3}, {10, 64}, {64}});
    std::vector<NamedTensor> params;
    for (const auto& e : bucket.entries) params.push_back({e.name, e.param});
    algo->setup(params, comm);
    bucket.flat.copy_(randn_seeded(bucket.flat.numel(), 1000 + comm.rank()));
    StepContext ctx;
    ctx.lr = 0.1;
    algo->reduce_gradients(bucket, comm, ctx);
    const int64_t bytes = 8 * 25;
    EXPECT_EQ(ctx.stats["topk.payload_bytes"], bytes);
    EXPECT_EQ(comm.step().payload_bytes, n > 1 ? bytes : 0);
    EXPECT_EQ(comm.step().bus_bytes, allgather_bus_bytes(bytes * n, n));
    EXPECT_EQ(comm.step().calls, 1);
    return bucket.flat.clone();
  });
  auto expect = torch::zeros({2432});
  for (int r = 0; r < n; ++r) expect.add_(topk_dense(randn_seeded(2432, 1000 + r), 25) / n);
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(torch::equal(results[r], results[0])) << "rank " << r;
    EXPECT_TRUE(torch::allclose(results[r], expect, 1e-6, 1e-7));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TopKGlobalRanks, ::testing::Values(1, 2, 4));

// ResNet-20's 269,722 values: 8·⌈0.01·269722⌉ = 8·2698 bytes model-wide, against 8·Σ⌈0.01·n_i⌉
// per layer (each of its 65 tensors rounds its k up).
TEST(TopKGlobalScope, BytesPerStepForResNet20Gradients) {
  int64_t layer = 0;
  for (const auto& s : testing::resnet20_shapes())
    layer += 8 * testing::ceil_div(c10::multiply_integers(s), 100);
  for (int64_t bytes : testing::resnet20_step_payloads("topk", "{scope: global}"))
    EXPECT_EQ(bytes, 8 * 2698);
  for (int64_t bytes : testing::resnet20_step_payloads("topk", "{}")) EXPECT_EQ(bytes, layer);
  EXPECT_GT(layer, 8 * 2698);
}

// The model-wide memory and its learning rate are the state: a run resumed from the state saved
// after step 1 computes step 2 bit for bit as the uninterrupted one (the lr changes at step 2).
TEST(TopKGlobalScope, ResumesFromSavedStateBitForBit) {
  LocalCommunicator local;
  auto bucket = bucket_of_shapes({{20, 30}, {40}});
  std::vector<NamedTensor> params;
  for (const auto& e : bucket.entries) params.push_back({e.name, e.param});
  auto step = [&](Algorithm& algo, int t) {
    bucket.flat.copy_(randn_seeded(640, 500 + t));
    StepContext ctx;
    ctx.step = t;
    ctx.lr = t < 2 ? 0.1 : 0.03;
    algo.reduce_gradients(bucket, local, ctx);
    return bucket.flat.clone();
  };
  auto through = make_algorithm("topk", "{ratio: 0.05, scope: global}");
  through->setup(params, local);
  step(*through, 0);
  step(*through, 1);
  AlgorithmState saved;
  through->save_state(saved);
  EXPECT_EQ(saved.count("memory.bucket.0"), 1u);
  auto resumed = make_algorithm("topk", "{ratio: 0.05, scope: global}");
  resumed->setup(params, local);
  resumed->load_state(saved);
  EXPECT_TRUE(torch::equal(step(*resumed, 2), step(*through, 2)));
}

// A model in several buckets cannot be selected over at once: the first bucket is refused with
// the bucket size that holds the model (3 MiB for 600,000 fp32 values).
TEST(TopKGlobalScope, RefusesABucketThatIsNotTheWholeModel) {
  auto algo = make_algorithm("topk", "{scope: global}");
  LocalCommunicator local;
  std::vector<NamedTensor> params = {{"a", torch::zeros({500000})}, {"b", torch::zeros({100000})}};
  algo->setup(params, local);
  auto bucket = bucket_of_shapes({{100000}});
  StepContext ctx;
  ctx.lr = 0.1;
  try {
    algo->reduce_gradients(bucket, local, ctx);
    ADD_FAILURE() << "a bucket of part of the model was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("topk: scope: global"), std::string::npos) << what;
    EXPECT_NE(what.find("600000"), std::string::npos) << what;
    EXPECT_NE(what.find("train.bucket_mb to at least 3"), std::string::npos) << what;
  }
  EXPECT_THROW(make_algorithm("topk", "{scope: model}"), ConfigError);
}

TEST(TopKAlgorithm, ParameterBoundsAndUnknownKeys) {
  EXPECT_THROW(make_algorithm("topk", "{ratio: 0}"), ConfigError);
  EXPECT_THROW(make_algorithm("topk", "{ratio: 1.5}"), ConfigError);
  EXPECT_THROW(make_algorithm("topk", "{k: 3}"), ConfigError);
  EXPECT_NO_THROW(make_algorithm("topk", "{ratio: 1}"));
  auto docs = topk_algorithm().params();
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0].key, "ratio");
  EXPECT_EQ(docs[0].default_value, "0.01");
  EXPECT_EQ(docs[2].key, "scope");
  EXPECT_EQ(docs[2].default_value, "layer");
  EXPECT_EQ(topk_algorithm().name, "topk");
}

}  // namespace
}  // namespace cedar
