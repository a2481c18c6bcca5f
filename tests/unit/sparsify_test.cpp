// The sparse (index, value) encoding, top-k and random-k with error feedback (Stich et al. 2018):
// exact payload sizes, the error-feedback invariant, oracles of the paper's rule, multi-rank
// agreement and metered bytes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "algorithms/catalog.h"
#include "algorithms/algorithm.h"
#include "algorithms/exchange/error_feedback.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/bus_bytes.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/bucket_fixtures.h"

namespace cedar {

namespace {

using ::cedar::testing::bucket_of_shapes;
using ::cedar::testing::randn_seeded;

std::unique_ptr<Algorithm> make(const AlgorithmInfo& info, const std::string& yaml) {
  return info.make(YAML::Load(yaml), Source{}, nullptr);
}



// p with everything but its k largest magnitudes zeroed (the definition of top-k).
torch::Tensor topk_dense(const torch::Tensor& p, int64_t k) {
  auto idx = std::get<1>(torch::topk(p.abs(), k));
  auto out = torch::zeros_like(p);
  out.index_put_({idx}, p.index_select(0, idx));
  return out;
}

TEST(SparseEncoding, RoundTripAndExactSize) {
  auto idx = torch::tensor({0, 3, 17, 999}, torch::kLong);
  auto val = torch::tensor({1.5f, -2.25f, 1e-30f, 3e30f});
  auto payload = encode_sparse(idx, val);
  EXPECT_EQ(payload.scalar_type(), torch::kByte);
  EXPECT_EQ(payload.numel(), sparse_payload_bytes(4));
  EXPECT_EQ(payload.numel(), 32);
  SparseView s = decode_sparse(payload);
  EXPECT_TRUE(torch::equal(s.indices, idx));
  EXPECT_TRUE(torch::equal(s.values, val));
  EXPECT_EQ(encode_sparse(torch::zeros({0}, torch::kLong), torch::zeros({0})).numel(), 0);
  EXPECT_THROW(decode_sparse(torch::zeros({7}, torch::kByte)), std::invalid_argument);
  EXPECT_THROW(encode_sparse(idx, val.narrow(0, 0, 3)), std::invalid_argument);
  TopKCompressor c(0.25);
  auto dense = c.decompress(payload, 1000);
  EXPECT_EQ(dense.numel(), 1000);
  EXPECT_EQ(dense[17].item<float>(), 1e-30f);
  EXPECT_EQ(dense.ne(0).sum().item<int64_t>(), 4);
}

TEST(SparseEncoding, KeepCount) {
  EXPECT_EQ(keep_count(1000, 0.001), 1);
  EXPECT_EQ(keep_count(1001, 0.001), 2);
  EXPECT_EQ(keep_count(10, 1.0), 10);
  EXPECT_EQ(keep_count(5, 1e-9), 1);
  EXPECT_EQ(keep_count(0, 0.5), 0);
  EXPECT_EQ(keep_count(270, 0.01), 3);
}

TEST(SparseEncoding, AllgatherAndScatterIntoSegments) {
  const int n = 3;
  run_ranks(n, [](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    // Rank r sends index r (value 1) and index r+2 (value r) of a 6-element joint space that is
    // split into segments of 2 and 4 elements.
    auto payload =
        encode_sparse(torch::tensor({r, r + 2}, torch::kLong), torch::tensor({1.0f, float(r)}));
    auto all = allgather_sparse(payload, comm);
    ASSERT_EQ(all.size(), 3u);
    std::vector<torch::Tensor> segments = {torch::zeros({2}), torch::full({4}, 10.0f)};
    for (const auto& s : all) scatter_add_segments(s, segments, 0.5);
    // Joint index i gets 1 from rank i (i < 3) and i-2 from rank i-2 (i >= 2), halved; the second
    // segment (joint indices 2..5) starts at 10: sums 1, 1, 1, 1, 2, 0.
    EXPECT_TRUE(torch::equal(segments[0], torch::tensor({0.5f, 0.5f}))) << segments[0];
    EXPECT_TRUE(torch::equal(segments[1], torch::tensor({10.5f, 10.5f, 11.0f, 10.0f})))
        << segments[1];
    EXPECT_EQ(comm.step().payload_bytes, 16 + 8);
    EXPECT_EQ(comm.step().bus_bytes, allgather_bus_bytes(n * 16 + 8 * n, n));
    SparseView unsorted{torch::tensor({3, 1}, torch::kLong), torch::ones({2})};
    EXPECT_THROW(scatter_add_segments(unsorted, segments, 1.0), std::invalid_argument);
    SparseView outside{torch::tensor({6}, torch::kLong), torch::ones({1})};
    EXPECT_THROW(scatter_add_segments(outside, segments, 1.0), std::invalid_argument);
  });
}

TEST(TopKCompressor, SelectsExactTopKAndFixedSize) {
  auto x = randn_seeded(1000, 3);
  TopKCompressor c(0.05);
  auto gen = make_generator(0, 0, 0);
  EXPECT_EQ(c.payload_bytes(1000), 8 * 50);
  auto payload = c.compress(x, gen);
  EXPECT_EQ(payload.numel(), 8 * 50);
  EXPECT_TRUE(torch::equal(c.decompress(payload, 1000), topk_dense(x, 50)));
}

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

// Oracle: the paper's rule in units of the step (m <- m + η·g − top_k(m + η·g), w <- w −
// top_k(...)) against the algorithm's output times η, over steps whose learning rate changes.
TEST(TopKAlgorithm, OracleOfThePaperRuleWithChangingLr) {
  auto algo = make(topk_algorithm(), "{ratio: 0.05}");
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
  auto algo = make(topk_algorithm(), "{ratio: 0.1, error_feedback: false}");
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

// Every rank ends with the same average of the ranks' top-k (first step: e = 0), and the
// metered bytes are one allgather of 8·Σk.
class MultiRank : public ::testing::TestWithParam<int> {};

TEST_P(MultiRank, TopKAgreesAndCountsBytes) {
  const int n = GetParam();
  std::mutex mu;
  std::vector<torch::Tensor> results(n);
  run_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make(topk_algorithm(), "{ratio: 0.01}");
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
    std::lock_guard<std::mutex> lock(mu);
    results[comm.rank()] = bucket.flat.clone();
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

TEST_P(MultiRank, RandomKSharedAgreesAndCountsBytes) {
  const int n = GetParam();
  std::mutex mu;
  std::vector<torch::Tensor> results(n);
  run_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make(randomk_algorithm(), "{ratio: 0.01}");
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
    std::lock_guard<std::mutex> lock(mu);
    results[comm.rank()] = bucket.flat.clone();
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

TEST_P(MultiRank, RandomKOwnIndicesAgreesAndCountsBytes) {
  const int n = GetParam();
  std::mutex mu;
  std::vector<torch::Tensor> results(n);
  run_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make(randomk_algorithm(), "{ratio: 0.05, shared_indices: false}");
    auto bucket = bucket_of_shapes({{40, 20}});
    // Rank r's gradient is r+1 everywhere: the output is Σ_{r: i ∈ S_r} (r+1) / n.
    bucket.flat.fill_(float(comm.rank() + 1));
    StepContext ctx;
    ctx.lr = 0.1;
    ctx.seed = 3;
    algo->reduce_gradients(bucket, comm, ctx);
    EXPECT_EQ(comm.step().payload_bytes, n > 1 ? 8 * 40 : 0);
    EXPECT_EQ(comm.step().bus_bytes, allgather_bus_bytes(8 * 40 * n, n));
    std::lock_guard<std::mutex> lock(mu);
    results[comm.rank()] = bucket.flat.clone();
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

INSTANTIATE_TEST_SUITE_P(Ranks, MultiRank, ::testing::Values(1, 2, 4));

// Oracle for random-k: the output is p = g + e on exactly k coordinates, e keeps the rest.
TEST(RandomKAlgorithm, OracleAndReproducibility) {
  auto run = [](uint64_t seed) {
    auto algo = make(randomk_algorithm(), "{ratio: 0.1}");
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

TEST(SparsifyParams, BoundsAndUnknownKeys) {
  EXPECT_THROW(make(topk_algorithm(), "{ratio: 0}"), ConfigError);
  EXPECT_THROW(make(topk_algorithm(), "{ratio: 1.5}"), ConfigError);
  EXPECT_THROW(make(randomk_algorithm(), "{ratio: -0.1}"), ConfigError);
  EXPECT_THROW(make(randomk_algorithm(), "{k: 3}"), ConfigError);
  EXPECT_NO_THROW(make(topk_algorithm(), "{ratio: 1}"));
  auto docs = topk_algorithm().params();
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].key, "ratio");
  EXPECT_EQ(docs[0].default_value, "0.01");
  EXPECT_EQ(randomk_algorithm().params().size(), 3u);
  EXPECT_EQ(topk_algorithm().name, "topk");
  EXPECT_EQ(randomk_algorithm().name, "randomk");
}

}  // namespace
}  // namespace cedar
