// gTop-k (Shi et al., ICDCS 2019): the global set against an oracle of the merge tree computed
// naively from all ranks' vectors (with the fold of ranks beyond a power of two), the residuals
// against the contributions that oracle tracks, agreement of every rank, bytes and messages per
// step against the formula, mass conservation of the error feedback, the dense average at density
// 1, a dropped index that comes back, the warm-up, a malformed peer set, and the parameters.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/exchange/global_topk.h"
#include "comm/communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::bucket_of_shapes;
using testing::make_algorithm;
using testing::randn_seeded;
using testing::same_bits;

// Two tensors, 128 and 24 values; at density 0.125 k = 16 and 3 (K = 19 entries per message).
const std::vector<std::vector<int64_t>> kShapes = {{8, 16}, {24}};
const std::vector<int64_t> kTensorSizes = {128, 24}, kKeep = {16, 3};
constexpr int64_t kTotal = 152, kEntries = 19;
const char* const kYaml = "{density: 0.125, warmup_epochs: 0}";

at::Tensor grad_of(int rank, int64_t step) { return randn_seeded(kTotal, 1000 * step + rank); }

int pow2_floor(int n) {
  int p = 1;
  while (2 * p <= n) p *= 2;
  return p;
}
int log2_of(int p) {
  int l = 0;
  while ((1 << l) < p) ++l;
  return l;
}

// ---------------------------------------------------------------- the oracle
// A set of one tensor as dense vectors: its values, its support, and each rank's contribution to
// each value (row q: rank q's own values that the set's sums contain).
struct Set {
  at::Tensor value, in, contrib;
};

// The k largest |value| within the support (random normal data: no ties to break).
Set keep_topk(const Set& s, int64_t k) {
  auto idx = std::get<1>(torch::topk(s.value.abs().masked_fill(s.in.logical_not(), -1), k));
  auto keep = torch::zeros_like(s.in).index_fill_(0, idx, true);
  return {torch::where(keep, s.value, torch::zeros_like(s.value)), keep,
          torch::where(keep.unsqueeze(0), s.contrib, torch::zeros_like(s.contrib))};
}

Set merge(const Set& a, const Set& b, int64_t k) {
  return keep_topk({a.value + b.value, a.in | b.in, a.contrib + b.contrib}, k);
}

// The final set of one tensor from each rank's G = g + e: local top-k, fold of ranks >= P', then
// recursive doubling among the first P'.
Set oracle_global(const std::vector<at::Tensor>& sums, int64_t k) {
  const int n = static_cast<int>(sums.size()), p2 = pow2_floor(n);
  const int64_t d = sums[0].numel();
  std::vector<Set> sets;
  for (int q = 0; q < n; ++q) {
    auto contrib = torch::zeros({n, d});
    contrib[q] = sums[q];
    sets.push_back(keep_topk({sums[q], torch::ones({d}, torch::kBool), contrib}, k));
  }
  for (int q = p2; q < n; ++q) sets[q - p2] = merge(sets[q - p2], sets[q], k);
  for (int bit = 1; bit < p2; bit <<= 1) {
    std::vector<Set> next(sets);
    for (int q = 0; q < p2; ++q) next[q] = merge(sets[q], sets[q ^ bit], k);
    sets = next;
  }
  return sets[0];
}

// ---------------------------------------------------------------- steps on n ranks

struct RankStep {
  at::Tensor update;    // the bucket after reduce_gradients
  at::Tensor residual;  // both tensors' residuals after the step, concatenated
  CommCounters comm;
  double payload_stat = 0;
};

// `steps` steps of gtopk on n in-process ranks with grad_of's gradients; [rank][step].
std::vector<std::vector<RankStep>> run_gtopk(int n, const std::string& yaml, int steps,
                                             const std::vector<std::vector<int64_t>>& shapes,
                                             at::Tensor (*grads)(int, int64_t)) {
  return testing::on_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make_algorithm("gtopk", yaml);
    auto bucket = bucket_of_shapes(shapes);
    std::vector<RankStep> out;
    for (int t = 0; t < steps; ++t) {
      bucket.flat.copy_(grads(comm.rank(), t));
      comm.reset_step();
      StepContext ctx;
      ctx.step = t;
      ctx.lr = 0.1;
      algo->reduce_gradients(bucket, comm, ctx);
      AlgorithmState state;
      algo->save_state(state);
      std::vector<at::Tensor> res;
      for (size_t i = 0; i < shapes.size(); ++i)
        res.push_back(state.at("residual.t" + std::to_string(i)).reshape({-1}));
      out.push_back(
          {bucket.flat.clone(), torch::cat(res), comm.step(), ctx.stats["gtopk.payload_bytes"]});
    }
    return out;
  });
}

class GTopKRanks : public ::testing::TestWithParam<int> {};

// Three steps: each step's update on every rank equals the oracle's final set / P (the same
// additions in the same order: bitwise), and each rank's residual equals its G minus its
// contribution to the final set (bitwise: values are kept or zeroed, never added).
TEST_P(GTopKRanks, GlobalSetAndResidualsMatchTheMergeTreeOracle) {
  const int n = GetParam();
  auto res = run_gtopk(n, kYaml, 3, kShapes, grad_of);
  std::vector<at::Tensor> e;  // each rank's residual (distinct tensors)
  for (int q = 0; q < n; ++q) e.push_back(torch::zeros({kTotal}));
  for (int t = 0; t < 3; ++t) {
    std::vector<at::Tensor> sums;
    for (int q = 0; q < n; ++q) sums.push_back(grad_of(q, t) + e[static_cast<size_t>(q)]);
    auto update = torch::zeros({kTotal});
    int64_t off = 0;
    for (size_t i = 0; i < kTensorSizes.size(); ++i) {
      std::vector<at::Tensor> part;
      for (const auto& s : sums) part.push_back(s.narrow(0, off, kTensorSizes[i]));
      Set g = oracle_global(part, kKeep[i]);
      EXPECT_EQ(g.in.sum().item<int64_t>(), kKeep[i]);
      update.narrow(0, off, kTensorSizes[i]).copy_(g.value / n);
      for (int q = 0; q < n; ++q)
        e[q].narrow(0, off, kTensorSizes[i]).copy_(part[q] - g.contrib[q]);
      off += kTensorSizes[i];
    }
    for (int q = 0; q < n; ++q) {
      EXPECT_TRUE(same_bits(res[q][t].update, update)) << "rank " << q << " step " << t;
      EXPECT_TRUE(same_bits(res[q][t].residual, e[q])) << "rank " << q << " step " << t;
    }
  }
}

// Bytes and messages per step: one sendrecv of 8·K bytes per round (log2 P' rounds); with P not
// a power of two, rank r >= P' sends its 8·K bytes to r − P' and receives the result (a recv:
// a call, no bytes), and r − P' receives them and sends back 9·K (the result and K flags).
TEST_P(GTopKRanks, BytesAndMessagesPerStepFollowTheFormula) {
  const int n = GetParam(), p2 = pow2_floor(n), rounds = log2_of(p2);
  auto res = run_gtopk(n, kYaml, 2, kShapes, grad_of);
  for (int r = 0; r < n; ++r) {
    int64_t bytes = 8 * kEntries * rounds, sent = rounds, received = 0;
    if (r >= p2) {
      bytes = 8 * kEntries;
      sent = 1;
      received = 1;
    } else if (r + p2 < n) {
      bytes += 9 * kEntries;
      sent += 1;
      received = 1;
    }
    for (int t = 0; t < 2; ++t) {
      const CommCounters& c = res[r][t].comm;
      EXPECT_EQ(c.payload_bytes, bytes) << "rank " << r;
      EXPECT_EQ(c.bus_bytes, bytes) << "rank " << r;
      EXPECT_EQ(c.calls, sent + received) << "rank " << r;
      EXPECT_EQ(c.latency_steps, sent) << "rank " << r;
      EXPECT_EQ(res[r][t].payload_stat, static_cast<double>(bytes)) << "rank " << r;
    }
  }
}

// Error feedback loses nothing: P·update + Σ_p (e_p' − e_p) = Σ_p g_p at every step (the sums
// differ in order only: 1e-5 absolute on unit-variance data).
TEST_P(GTopKRanks, ErrorFeedbackConservesMass) {
  const int n = GetParam();
  auto res = run_gtopk(n, kYaml, 4, kShapes, grad_of);
  for (int t = 0; t < 4; ++t) {
    auto lhs = res[0][t].update * n;
    auto rhs = torch::zeros({kTotal});
    for (int q = 0; q < n; ++q) {
      lhs += res[q][t].residual - (t > 0 ? res[q][t - 1].residual : torch::zeros({kTotal}));
      rhs += grad_of(q, t);
      EXPECT_TRUE(same_bits(res[q][t].update, res[0][t].update)) << "rank " << q;
    }
    EXPECT_TRUE(torch::allclose(lhs, rhs, 0, 1e-5)) << "step " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, GTopKRanks, ::testing::Values(1, 2, 3, 4, 6, 8));

// At density 1 every coordinate is in every set: the update is the ranks' average. It equals
// dense SGD's allreduce average to float rounding (the merge tree adds in another order than the
// allreduce: 1e-6 relative), and bitwise on 2 ranks (one addition, commutative).
TEST(GTopKAlgorithm, DensityOneIsTheDenseAverage) {
  auto grads_of = [](int r, int64_t t) {
    return std::vector<at::Tensor>{randn_seeded(24, 10 * t + r).view({4, 6}),
                                   randn_seeded(5, 100 + 10 * t + r)};
  };
  for (int n : {2, 3, 4, 8}) {
    auto sparse = testing::run_steps(n, "gtopk", "{density: 1, warmup_epochs: 0}", 3, grads_of);
    auto dense = testing::run_steps(n, "dense", "{}", 3, grads_of);
    testing::expect_ranks_agree(sparse);
    for (int64_t t = 0; t < 3; ++t)
      for (size_t i = 0; i < 2; ++i) {
        const auto& a = sparse[0][t].grads[i];
        const auto& b = dense[0][t].grads[i];
        if (n == 2) {
          EXPECT_TRUE(same_bits(a, b)) << "step " << t << " tensor " << i;
        } else
          EXPECT_TRUE(torch::allclose(a, b, 1e-6, 1e-7)) << n << " ranks, step " << t;
      }
  }
}

at::Tensor reentry_grad(int rank, int64_t) {
  // Round 0: rank 0's index 0 (1.0) loses to rank 1's index 1 (2.0); ranks 2 and 3 keep index 0
  // (3.0), which wins round 1. Index 0 is in the final set, but rank 0's value is not.
  const float rows[4][4] = {{1, 0, 0, 0}, {0, 2, 0, 0}, {3, 0, 0, 0}, {0, 0, 0.5f, 0}};
  return torch::tensor(std::vector<float>(rows[rank], rows[rank] + 4));
}

// An index a merge dropped comes back from another block: the dropped value stays in the
// residual (the paper's ¬gMask would zero it, as index 0 is in the global set).
TEST(GTopKAlgorithm, AValueDroppedOnTheWayStaysInTheResidual) {
  auto res = run_gtopk(4, "{density: 0.25, warmup_epochs: 0}", 1, {{4}}, reentry_grad);
  const auto update = torch::tensor({0.75f, 0.f, 0.f, 0.f});
  const std::vector<std::vector<float>> residual = {
      {1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 0, 0}, {0, 0, 0.5f, 0}};
  for (int q = 0; q < 4; ++q) {
    EXPECT_TRUE(torch::equal(res[q][0].update, update)) << "rank " << q;
    EXPECT_TRUE(torch::equal(res[q][0].residual, torch::tensor(residual[q]))) << "rank " << q;
  }
}

// Epochs below warmup_epochs send max(density, warmup_density); later ones density.
TEST(GTopKAlgorithm, WarmupEpochsSendTheWarmupDensity) {
  auto algo = make_algorithm("gtopk", "{density: 0.01, warmup_epochs: 2, warmup_density: 0.05}");
  LocalCommunicator local;
  auto bucket = bucket_of_shapes({{1000}});
  for (int64_t epoch : {0, 1, 2, 3}) {
    bucket.flat.copy_(randn_seeded(1000, 5 + epoch));
    StepContext ctx;
    ctx.epoch = epoch;
    algo->reduce_gradients(bucket, local, ctx);
    EXPECT_EQ(bucket.flat.ne(0).sum().item<int64_t>(), epoch < 2 ? 50 : 10) << "epoch " << epoch;
    EXPECT_EQ(ctx.stats["gtopk.density"], epoch < 2 ? 0.05 : 0.01);
  }
  auto lower = make_algorithm("gtopk", "{density: 0.1, warmup_epochs: 1, warmup_density: 0.05}");
  bucket.flat.copy_(randn_seeded(1000, 9));
  StepContext ctx;
  lower->reduce_gradients(bucket, local, ctx);
  EXPECT_EQ(bucket.flat.ne(0).sum().item<int64_t>(), 100);
}

// A peer whose set is not strictly ascending within the tensor: a CommError naming the rank.
TEST(GTopKExchange, AMalformedPeerSetIsAnError) {
  auto errors = testing::on_ranks(2, [](Communicator& comm) -> std::string {
    SparseSegments local;
    local.numel = {10};
    local.count = {2};
    local.index = {1, 4};
    local.value = {1.f, 2.f};
    if (comm.rank() == 1) {
      // Indices 4, 4 (not strictly ascending), then the two values.
      auto bad = torch::tensor({4, 4}, torch::kInt).view(torch::kByte);
      auto msg = torch::cat({bad, torch::tensor({1.f, 2.f}).view(torch::kByte)});
      auto in = torch::empty({16}, torch::kByte);
      comm.sendrecv(msg, 0, in, 0);
      return "";
    }
    MergeScratch scratch;
    try {
      global_topk_allreduce(local, comm, scratch);
    } catch (const CommError& e) {
      return e.what();
    }
    return "no error";
  });
  EXPECT_NE(errors[0].find("received from rank 1"), std::string::npos) << errors[0];
}

TEST(GTopKAlgorithm, ParameterBoundsAndUnknownKeys) {
  EXPECT_THROW(make_algorithm("gtopk", "{density: 0}"), ConfigError);
  EXPECT_THROW(make_algorithm("gtopk", "{density: 1.5}"), ConfigError);
  EXPECT_THROW(make_algorithm("gtopk", "{warmup_epochs: -1}"), ConfigError);
  EXPECT_THROW(make_algorithm("gtopk", "{ratio: 0.1}"), ConfigError);
  auto docs = gtopk_algorithm().params();
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0].key, "density");
  EXPECT_EQ(docs[0].default_value, "0.001");
  EXPECT_EQ(docs[1].default_value, "1");
  EXPECT_EQ(docs[2].default_value, "0.004");
  EXPECT_EQ(gtopk_algorithm().name, "gtopk");
}

}  // namespace
}  // namespace cedar
