// Random-k sparsification with error feedback (Stich et al. 2018): uniform, distinct and seeded
// coordinates, an oracle of the rule with reproducibility from the run seed, multi-rank agreement
// and metered bytes with shared and with own index sets, the parameters, and the values-only
// payload given the wrong size (a peer's bytes are untrusted); scope: global, k drawn over the
// concatenated model, its bytes, and its refusal of a model spread over several buckets.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/randomk_codec.h"
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

TEST(RandomKCompressor, UniformDistinctAndSeeded) {
  RandomKCompressor c(0.1, false);
  auto x = torch::ones({100});
  auto counts = torch::zeros({100});
  for (int s = 0; s < 400; ++s) {
    auto gen = make_generator(7, 0, s);
    auto idx = c.select(x, gen);
    ASSERT_EQ(idx.numel(), 10);
    EXPECT_EQ(std::get<0>(torch::_unique(idx)).numel(), 10);
    counts.index_add_(0, idx, torch::ones({10}));
  }
  // Each coordinate is chosen with probability 0.1: 40 expected, σ ≈ 6.
  EXPECT_GT(counts.min().item<float>(), 15);
  EXPECT_LT(counts.max().item<float>(), 70);
  auto g1 = make_generator(7, 0, 3), g2 = make_generator(7, 0, 3), g3 = make_generator(8, 0, 3);
  EXPECT_TRUE(torch::equal(c.select(x, g1), c.select(x, g2)));
  EXPECT_FALSE(torch::equal(c.select(x, g2), c.select(x, g3)));
}

// Oracle for random-k: the output is p = g + e on exactly k coordinates, e keeps the rest.
TEST(RandomKAlgorithm, OracleAndReproducibility) {
  auto run = [](uint64_t seed) {
    auto algo = make_algorithm("randomk", "{ratio: 0.1}");
    LocalCommunicator local;
    auto bucket = bucket_of_shapes({{10, 20}});
    auto e = torch::zeros({200});
    std::vector<torch::Tensor> outs;
    for (int step = 0; step < 4; ++step) {
      auto g = randn_seeded(200, 70 + step);
      bucket.entries[0].grad.copy_(g.view({10, 20}));
      StepContext ctx;
      ctx.step = step;
      ctx.seed = seed;
      ctx.lr = 0.1;
      algo->reduce_gradients(bucket, local, ctx);
      auto out = bucket.flat.clone();
      auto p = g + e;
      auto where = out.ne(0);
      EXPECT_EQ(where.sum().item<int64_t>(), 20);
      EXPECT_TRUE(torch::equal(out.masked_select(where), p.masked_select(where)));
      e = p - out;
      outs.push_back(out);
    }
    return torch::stack(outs);
  };
  auto a = run(1), b = run(1), c = run(2);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, c));
  // Different steps draw different coordinates.
  EXPECT_FALSE(torch::equal(a[0].ne(0), a[1].ne(0)));
}

class RandomKRanks : public ::testing::TestWithParam<int> {};

TEST_P(RandomKRanks, SharedIndicesAgreeAndCountBytes) {
  const int n = GetParam();
  auto results = testing::on_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make_algorithm("randomk", "{ratio: 0.01}");
    auto bucket = bucket_of_shapes({{64, 3, 3, 3}, {10, 64}, {64}}, 2);
    bucket.flat.copy_(randn_seeded(bucket.flat.numel(), 1000 + comm.rank()));
    StepContext ctx;
    ctx.lr = 0.1;
    ctx.seed = 9;
    ctx.step = 4;
    algo->reduce_gradients(bucket, comm, ctx);
    const int64_t bytes = 4 * (18 + 7 + 1);
    EXPECT_EQ(comm.step().payload_bytes, n > 1 ? bytes : 0);
    EXPECT_EQ(comm.step().bus_bytes, allreduce_bus_bytes(bytes, n));
    EXPECT_EQ(ctx.stats["randomk.payload_bytes"], bytes);
    return bucket.flat.clone();
  });
  // Same coordinates everywhere: the support has exactly Σk elements, carrying the mean of g.
  auto support = results[0].ne(0);
  EXPECT_EQ(support.sum().item<int64_t>(), 18 + 7 + 1);
  auto mean = torch::zeros_like(results[0]);
  for (int r = 0; r < n; ++r) mean += randn_seeded(mean.numel(), 1000 + r) / n;
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(torch::equal(results[r], results[0])) << "rank " << r;
    EXPECT_TRUE(torch::allclose(results[r], mean * support, 1e-6, 1e-7));
  }
}

TEST_P(RandomKRanks, OwnIndicesAgreeAndCountBytes) {
  const int n = GetParam();
  auto results = testing::on_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make_algorithm("randomk", "{ratio: 0.05, shared_indices: false}");
    auto bucket = bucket_of_shapes({{40, 20}});
    // Rank r's gradient is r+1 everywhere: the output is Σ_{r: i ∈ S_r} (r+1) / n.
    bucket.flat.fill_(float(comm.rank() + 1));
    StepContext ctx;
    ctx.lr = 0.1;
    ctx.seed = 3;
    algo->reduce_gradients(bucket, comm, ctx);
    EXPECT_EQ(comm.step().payload_bytes, n > 1 ? 8 * 40 : 0);
    EXPECT_EQ(comm.step().bus_bytes, allgather_bus_bytes(8 * 40 * n, n));
    return bucket.flat.clone();
  });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(torch::equal(results[r], results[0]));
  // Total mass: each rank sends k = 40 coordinates of value r+1.
  double total = 0;
  for (int r = 0; r < n; ++r) total += 40.0 * (r + 1) / n;
  EXPECT_NEAR(results[0].sum().item<double>(), total, 1e-4);
  if (n > 1) {
    EXPECT_GT(results[0].ne(0).sum().item<int64_t>(), 40);  // independent index sets
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, RandomKRanks, ::testing::Values(1, 2, 4));

// ---------------------------------------------------------------- scope: global

// scope: global draws k = ⌈0.1·240⌉ = 24 coordinates over the concatenated model with one key of
// the bucket's generator: the selection of the random-k codec on the concatenation, however they
// fall on the tensors (layer scope: always 20 + 4); the output is p = g + e there and e keeps the
// rest.
TEST(RandomKGlobalScope, DrawsKOverTheWholeModel) {
  auto algo = make_algorithm("randomk", "{ratio: 0.1, scope: global}");
  LocalCommunicator local;
  auto bucket = bucket_of_shapes({{10, 20}, {40}}, 3);
  std::vector<NamedTensor> params;
  for (const auto& e : bucket.entries) params.push_back({e.name, e.param});
  algo->setup(params, local);
  RandomKCompressor oracle(0.1, /*values_only=*/true);
  auto e = torch::zeros({240});
  std::vector<int64_t> in_second;
  for (int step = 0; step < 40; ++step) {
    auto g = randn_seeded(240, 300 + step);
    bucket.flat.copy_(g);
    StepContext ctx;
    ctx.step = step;
    ctx.seed = 6;
    ctx.lr = 0.1;
    algo->reduce_gradients(bucket, local, ctx);
    auto gen = make_generator(6, 0, step, 3);
    const auto idx = oracle.select(torch::zeros({240}), gen);
    ASSERT_EQ(idx.numel(), 24);
    auto where = torch::zeros({240}, torch::kBool).index_fill_(0, idx, true);
    const auto out = bucket.flat.clone(), p = g + e;
    ASSERT_TRUE(torch::equal(out.ne(0), where)) << "step " << step;
    ASSERT_TRUE(torch::equal(out.masked_select(where), p.masked_select(where)));
    e = p - out;
    EXPECT_EQ(ctx.stats["randomk.payload_bytes"], 4 * 24);
    in_second.push_back(where.narrow(0, 200, 40).sum().item<int64_t>());
  }
  // The second tensor holds 1/6 of the model: 4 of 24 on average, not 4 every step.
  double mean = 0;
  for (int64_t c : in_second) mean += double(c) / in_second.size();
  EXPECT_NEAR(mean, 4.0, 1.5);
  EXPECT_NE(*std::min_element(in_second.begin(), in_second.end()),
            *std::max_element(in_second.begin(), in_second.end()));
}

// Model-wide k = ⌈0.01·2432⌉ = 25: 4·25 bytes of values in one allreduce with shared indices,
// 8·25 bytes of pairs in one allgather without; the ranks agree.
TEST(RandomKGlobalScope, BytesWithSharedAndOwnIndices) {
  for (bool shared : {true, false}) {
    const std::string yaml = std::string("{ratio: 0.01, scope: global, shared_indices: ") +
                             (shared ? "true" : "false") + "}";
    auto grads_of = [](int r, int64_t t) {
      return std::vector<at::Tensor>{randn_seeded(1728, 10 * t + r).view({64, 3, 3, 3}),
                                     randn_seeded(640, 100 + r).view({10, 64}),
                                     randn_seeded(64, 200 + r)};
    };
    auto res = testing::run_steps(2, "randomk", yaml, 2, grads_of);
    testing::expect_ranks_agree(res);
    for (int64_t t = 0; t < 2; ++t) {
      const auto& c = res[0][t].comm;
      EXPECT_EQ(c.calls, 1) << yaml;
      EXPECT_EQ(c.payload_bytes, shared ? 4 * 25 : 8 * 25) << yaml;
      EXPECT_EQ(c.bus_bytes,
                shared ? allreduce_bus_bytes(4 * 25, 2) : allgather_bus_bytes(16 * 25, 2))
          << yaml;
      int64_t nonzero = 0;
      for (const auto& g : res[0][t].grads) nonzero += g.ne(0).sum().item<int64_t>();
      if (shared) {
        EXPECT_EQ(nonzero, 25) << "step " << t;
      }
    }
  }
  for (int64_t bytes : testing::resnet20_step_payloads("randomk", "{scope: global}"))
    EXPECT_EQ(bytes, 4 * 2698);  // ⌈0.01·269722⌉ values
}

TEST(RandomKGlobalScope, RefusesABucketThatIsNotTheWholeModel) {
  auto algo = make_algorithm("randomk", "{scope: global}");
  LocalCommunicator local;
  std::vector<NamedTensor> params = {{"a", torch::zeros({30})}, {"b", torch::zeros({10})}};
  algo->setup(params, local);
  auto bucket = bucket_of_shapes({{30}});
  StepContext ctx;
  ctx.lr = 0.1;
  EXPECT_THROW(algo->reduce_gradients(bucket, local, ctx), std::invalid_argument);
}

TEST(RandomKAlgorithm, ParameterBoundsAndUnknownKeys) {
  EXPECT_THROW(make_algorithm("randomk", "{ratio: 0}"), ConfigError);
  EXPECT_THROW(make_algorithm("randomk", "{ratio: -0.1}"), ConfigError);
  EXPECT_THROW(make_algorithm("randomk", "{k: 3}"), ConfigError);
  EXPECT_NO_THROW(make_algorithm("randomk", "{ratio: 1}"));
  EXPECT_EQ(randomk_algorithm().params().size(), 4u);
  EXPECT_EQ(randomk_algorithm().name, "randomk");
}

// The values-only payload (shared indices) holds exactly 4 bytes per kept value.
TEST(RandomKPayload, ValuesOnlyWrongSizesAreRejected) {
  using testing::decode_error;
  RandomKCompressor codec(0.5, /*values_only=*/true);
  const at::Tensor x = at::tensor(testing::codec_test_values());
  at::Generator gen = make_generator(3, 0, 0);
  const at::Tensor payload = codec.compress(x, gen);
  const int64_t k = codec.last_indices().numel();
  ASSERT_EQ(k, 7);  // ceil(13 / 2)
  ASSERT_EQ(payload.numel(), 4 * k);
  // The good payload scatters the kept values back to their coordinates.
  const at::Tensor kept = x.index_select(0, codec.last_indices());
  const at::Tensor y = codec.decompress(payload, 13);
  EXPECT_TRUE(y.index_select(0, codec.last_indices()).equal(kept));
  EXPECT_EQ(y.abs().sum().item<float>(), kept.abs().sum().item<float>());
  // A partial value (28 + 1, 28 - 1 bytes) or one value too many (32) is not the index set's.
  for (int64_t n : {29, 27, 32, 0}) {
    const at::Tensor bad = at::cat({payload, testing::filler_bytes(n)}).narrow(0, 0, n);
    const std::string message = decode_error(codec, bad, 13);
    EXPECT_NE(message.find("random-k: a values-only payload of " + std::to_string(n) + " bytes"),
              std::string::npos)
        << n << ": " << message;
    EXPECT_NE(message.find("expected 28"), std::string::npos) << n << ": " << message;
  }
  EXPECT_NE(decode_error(codec, at::zeros({7}, at::kFloat), 13)
                .find("random-k: expected a 1-D uint8 payload"),
            std::string::npos);
}

}  // namespace
}  // namespace cedar
