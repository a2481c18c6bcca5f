// DGC, top-k, random-k and gTop-k on real MPI ranks: every rank ends with the same reduced
// gradient, equal to the formula, and the metered bytes equal each algorithm's byte formula.
#include <gtest/gtest.h>
#include <torch/types.h>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/compressor.h"
#include "comm/bus_bytes.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {

namespace {

using ::cedar::testing::bucket_of_shapes;
using ::cedar::testing::randn_seeded;

// Every rank's copy of `t` (unmetered, on the raw communicator).
std::vector<torch::Tensor> everyones(MpiCommunicator& mpi, const torch::Tensor& t) {
  auto all = mpi.allgather(t);
  std::vector<torch::Tensor> out;
  for (int r = 0; r < mpi.size(); ++r) out.push_back(all.narrow(0, r * t.numel(), t.numel()));
  return out;
}

TEST(SparseMpi, DgcAgreesSelectsTopKAndCountsBytes) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const int n = comm.size(), r = comm.rank();
  ASSERT_GE(n, 2) << "run under mpirun -np 2 or more";
  auto grad_of = [n](int rank) {
    auto own = (torch::arange(64) % n == rank).to(torch::kFloat).unsqueeze(1);
    return (randn_seeded(64 * 50, 100 + rank).view({64, 50}) * own).reshape({-1});
  };
  auto algo =
      dgc_algorithm().make(YAML::Load("{sparsity: 0.99, warmup_epochs: 0}"), Source{}, nullptr);
  auto bucket = bucket_of_shapes({{64, 50}, {64}});
  bucket.entries[0].grad.copy_(grad_of(r).view({64, 50}));
  bucket.entries[1].grad.copy_(randn_seeded(64, 200 + r));
  StepContext ctx;
  ctx.seed = 5;
  algo->reduce_gradients(bucket, comm, ctx);
  const int64_t c = static_cast<int64_t>(ctx.stats["dgc.selected"]);
  EXPECT_EQ(comm.step().payload_bytes, 8 * c + 8 + 4 * 64);
  auto counts = everyones(mpi, torch::tensor({c}, torch::kLong));
  int64_t gathered = 0;
  for (auto& x : counts) gathered += 8 * x.item<int64_t>() + 8;
  EXPECT_EQ(comm.step().bus_bytes, allgather_bus_bytes(gathered, n) + allreduce_bus_bytes(256, n));
  auto results = everyones(mpi, bucket.flat);
  for (int q = 0; q < n; ++q) EXPECT_TRUE(torch::equal(results[q], results[0])) << "rank " << q;
  // Rank r's rows show its own selection: a superset of its exact top-32 of at most 1.3·32.
  auto w = bucket.flat.narrow(0, 0, 3200) * n;
  auto g = grad_of(r);
  auto sent = w.ne(0) & g.ne(0);
  EXPECT_EQ(sent.sum().item<int64_t>(), c);
  EXPECT_GE(c, 32);
  EXPECT_LE(c, 41);
  auto top = std::get<1>(torch::topk(g.abs(), 32));
  EXPECT_TRUE(sent.index_select(0, top).all().item<bool>());
  EXPECT_TRUE(torch::allclose(w * g.ne(0), g * sent, 1e-5, 1e-6));
  auto mean_bias = torch::zeros({64});
  for (int q = 0; q < n; ++q) mean_bias += randn_seeded(64, 200 + q) / n;
  EXPECT_TRUE(torch::allclose(bucket.flat.narrow(0, 3200, 64), mean_bias, 1e-6, 1e-6));
}

TEST(SparseMpi, TopKAgreesAndCountsBytes) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const int n = comm.size(), r = comm.rank();
  auto algo = topk_algorithm().make(YAML::Load("{ratio: 0.01}"), Source{}, nullptr);
  auto bucket = bucket_of_shapes({{64, 3, 3, 3}, {64}});
  bucket.flat.copy_(randn_seeded(1792, 1000 + r));
  StepContext ctx;
  ctx.lr = 0.1;
  algo->reduce_gradients(bucket, comm, ctx);
  EXPECT_EQ(comm.step().payload_bytes, 8 * (18 + 1));
  EXPECT_EQ(comm.step().bus_bytes, allgather_bus_bytes(8 * 19 * n, n));
  auto expect = torch::zeros({1792});
  for (int q = 0; q < n; ++q) {
    auto g = randn_seeded(1792, 1000 + q);
    for (auto [off, len, k] : {std::tuple<int64_t, int64_t, int64_t>{0, 1728, 18}, {1728, 64, 1}}) {
      auto part = g.narrow(0, off, len);
      auto idx = std::get<1>(torch::topk(part.abs(), k));
      expect.narrow(0, off, len).index_add_(0, idx, part.index_select(0, idx) / n);
    }
  }
  EXPECT_TRUE(torch::allclose(bucket.flat, expect, 1e-6, 1e-7));
  auto results = everyones(mpi, bucket.flat);
  for (int q = 0; q < n; ++q) EXPECT_TRUE(torch::equal(results[q], results[0]));
}

TEST(SparseMpi, RandomKSharedAgreesAndCountsBytes) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const int n = comm.size(), r = comm.rank();
  auto algo = randomk_algorithm().make(YAML::Load("{ratio: 0.01}"), Source{}, nullptr);
  auto bucket = bucket_of_shapes({{64, 3, 3, 3}, {64}});
  bucket.flat.copy_(randn_seeded(1792, 1000 + r));
  StepContext ctx;
  ctx.lr = 0.1;
  ctx.seed = 11;
  algo->reduce_gradients(bucket, comm, ctx);
  EXPECT_EQ(comm.step().payload_bytes, 4 * (18 + 1));
  EXPECT_EQ(comm.step().bus_bytes, allreduce_bus_bytes(4 * 19, n));
  auto support = bucket.flat.ne(0);
  EXPECT_EQ(support.sum().item<int64_t>(), 19);
  auto mean = torch::zeros({1792});
  for (int q = 0; q < n; ++q) mean += randn_seeded(1792, 1000 + q) / n;
  EXPECT_TRUE(torch::allclose(bucket.flat, mean * support, 1e-6, 1e-7));
  auto results = everyones(mpi, bucket.flat);
  for (int q = 0; q < n; ++q) EXPECT_TRUE(torch::equal(results[q], results[0]));
}

// gTop-k: log2 P rounds of one sendrecv of 8 bytes per entry (P = 2 or 4: no fold); every rank
// holds the top-k of the merge tree of the ranks' local top-k sets, divided by P.
TEST(SparseMpi, GTopKAgreesMatchesTheMergeTreeAndCountsBytes) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const int n = comm.size(), r = comm.rank();
  ASSERT_TRUE(n == 2 || n == 4) << "run under mpirun -np 2 or 4";
  const int rounds = n == 2 ? 1 : 2;
  auto algo =
      gtopk_algorithm().make(YAML::Load("{density: 0.01, warmup_epochs: 0}"), Source{}, nullptr);
  auto bucket = bucket_of_shapes({{64, 3, 3, 3}, {64}});
  bucket.flat.copy_(randn_seeded(1792, 3000 + r));
  StepContext ctx;
  algo->reduce_gradients(bucket, comm, ctx);
  EXPECT_EQ(comm.step().payload_bytes, rounds * 8 * (18 + 1));
  EXPECT_EQ(comm.step().bus_bytes, rounds * 8 * (18 + 1));
  EXPECT_EQ(comm.step().calls, rounds);
  auto expect = torch::zeros({1792});
  for (auto [off, len, k] : {std::tuple<int64_t, int64_t, int64_t>{0, 1728, 18}, {1728, 64, 1}}) {
    std::vector<torch::Tensor> sets;
    for (int q = 0; q < n; ++q)
      sets.push_back(testing::topk_dense(randn_seeded(1792, 3000 + q).narrow(0, off, len), k));
    for (int bit = 1; bit < n; bit <<= 1) {
      std::vector<torch::Tensor> next;
      for (int q = 0; q < n; ++q) next.push_back(testing::topk_dense(sets[q] + sets[q ^ bit], k));
      sets = next;
    }
    expect.narrow(0, off, len).copy_(sets[0] / n);
  }
  EXPECT_TRUE(torch::equal(bucket.flat, expect));
  auto results = everyones(mpi, bucket.flat);
  for (int q = 0; q < n; ++q) EXPECT_TRUE(torch::equal(results[q], results[0])) << "rank " << q;
}

}  // namespace
}  // namespace cedar
