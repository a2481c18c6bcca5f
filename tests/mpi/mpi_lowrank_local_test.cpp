// PowerSGD, LAG and local SGD on real MPI ranks (np 2 and 4): ranks agree where the algorithm
// says they must, and the metered bytes equal each algorithm's formula.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/compressor.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/run_network_profiles.h"
#include "runner/train/trainer.h"
#include "tests/mpi/synthetic_training.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {

namespace {

using testing::gather_all;

TEST(MpiLowrankLocal, PowerSgdAggregateIdenticalOnEveryRankAndBytesEqualFormula) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  ASSERT_GE(comm.size(), 2) << "run under mpirun -np 2 or more";
  GradBucket b = testing::bucket_of_shapes({{32, 16, 3, 3}, {32}, {10, 32}}, 0, "p");
  auto alg = powersgd_algorithm().make(YAML::Load("{rank: 2}"), Source{}, nullptr);
  const int64_t formula = 4 * ((32 + 144) * 2 + (10 + 32) * 2 + 32);
  for (int64_t step = 0; step < 3; ++step) {
    b.flat.copy_(at::randn({b.flat.numel()}, make_generator(9, comm.rank(), step)));
    StepContext ctx;
    ctx.step = step;
    comm.reset_step();
    alg->reduce_gradients(b, comm, ctx);
    EXPECT_EQ(comm.step().payload_bytes, formula);
    EXPECT_EQ(comm.step().calls, 3);
    auto all = gather_all(comm, b.flat);
    for (int r = 1; r < comm.size(); ++r) EXPECT_TRUE(torch::equal(all[r], all[0])) << "rank " << r;
  }
}

struct TrainResult {
  at::Tensor params;  // every rank's parameters, one row per rank
  int64_t numel = 0;
  std::map<std::string, CommCounters> totals;
  int64_t powersgd_bytes = 0;  // PowerSGD rank-2 bytes per step for this model (formula)
};

// Trains a CIFAR ResNet-20 on synthetic 8x8 images for `steps` steps with `alg`.
TrainResult train(const AlgorithmInfo& info, const std::string& yaml, int64_t steps) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  auto t = testing::synthetic_resnet20(steps, 256, 16, 7);  // the same weights on every rank
  Trainer trainer(t.cfg, run_network_profiles(t.cfg), t.model, t.data,
                  info.make(YAML::Load(yaml), Source{}, nullptr), comm, mpi, nullptr, -1,
                  torch::Device(torch::kCPU), true);
  trainer.run();
  TrainResult out;
  int64_t formula = 0;
  for (auto& p : t.model->parameters()) {
    if (p.dim() < 2) {
      formula += 4 * p.numel();
    } else {
      int64_t n = p.size(0), m = p.numel() / n, r = std::min<int64_t>({n, m, 2});
      formula += (n + m) * r * 2 < n * m ? 4 * (n + m) * r : 4 * p.numel();
    }
  }
  out.params = gather_all(comm, testing::flat_parameters(*t.model));
  out.numel = count_parameters(*t.model);
  out.totals = comm.totals();
  out.powersgd_bytes = formula;
  return out;
}

TEST(MpiLowrankLocal, PowerSgdTrainingKeepsRanksIdenticalAndSendsTheFormula) {
  auto res = train(powersgd_algorithm(), "{rank: 2}", 3);
  for (int r = 1; r < res.params.size(0); ++r)
    EXPECT_TRUE(torch::equal(res.params[r], res.params[0]));
  EXPECT_EQ(res.totals.at("allreduce").payload_bytes, 3 * res.powersgd_bytes);
  EXPECT_LT(res.powersgd_bytes * 5, 4 * res.numel);  // rank 2 sends well under a fifth
}

TEST(MpiLowrankLocal, LocalSgdRanksAgreeRightAfterASyncOnly) {
  const std::string yaml = "{period: 2, post_local_switch_epoch: 0}";
  auto synced = train(local_sgd_algorithm(), yaml, 4);  // syncs after steps 2 and 4
  for (int r = 1; r < synced.params.size(0); ++r)
    EXPECT_TRUE(torch::equal(synced.params[r], synced.params[0])) << "rank " << r;
  EXPECT_EQ(synced.totals.at("allreduce").payload_bytes, 2 * 4 * synced.numel);
  EXPECT_EQ(synced.totals.at("allreduce").calls, 2);
  auto local = train(local_sgd_algorithm(), yaml, 3);  // one local step after the last sync
  for (int r = 1; r < local.params.size(0); ++r)
    EXPECT_FALSE(torch::equal(local.params[r], local.params[0])) << "rank " << r;
  EXPECT_EQ(local.totals.at("allreduce").payload_bytes, 4 * local.numel);
}

TEST(MpiLowrankLocal, LagRanksAgreeAndOnlyUploadsCost) {
  auto res = train(lag_algorithm(), "{}", 3);
  for (int r = 1; r < res.params.size(0); ++r)
    EXPECT_TRUE(torch::equal(res.params[r], res.params[0]));
  const auto& g = res.totals.at("allgatherv");
  EXPECT_EQ(g.calls, 3);
  const int64_t grad_bytes = g.payload_bytes - 3 * 8;  // minus the 8-byte length per call
  EXPECT_EQ(grad_bytes % (4 * res.numel), 0);
  EXPECT_GE(grad_bytes, 4 * res.numel);  // the first step everyone uploads
  EXPECT_EQ(res.totals.count("allreduce"), 0u);
}

}  // namespace
}  // namespace cedar
