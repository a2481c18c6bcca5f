// Dense data-parallel training on real MPI ranks: ranks start from different random weights,
// the initial broadcast and the allreduce keep them identical, and the bytes sent per step equal
// one fp32 allreduce of every gradient.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "algorithms/algorithm.h"
#include "comm/bus_bytes.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/run_network_profiles.h"
#include "runner/train/trainer.h"
#include "tests/mpi/synthetic_training.h"

namespace cedar {
namespace {

TEST(MpiTraining, DenseKeepsEveryRankIdenticalAndSendsDenseBytes) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const int n = comm.size();

  // Different initial weights on every rank.
  auto t = testing::synthetic_resnet20(3, 128, 32, 100 + comm.rank());
  t.cfg.algorithm = "dense";
  auto algorithm = find_algorithm("dense").make(YAML::Node(), Source{}, nullptr);
  Trainer trainer(t.cfg, run_network_profiles(t.cfg), t.model, t.data, std::move(algorithm), comm,
                  mpi, nullptr, -1, torch::Device(torch::kCPU), true);
  trainer.run();

  auto all = testing::gather_all(comm, testing::flat_parameters(*t.model));
  for (int r = 1; r < n; ++r)
    EXPECT_TRUE(torch::equal(all[r], all[0])) << "rank " << r << " differs";
  EXPECT_GT((all[0] - all[0].roll(1)).abs().sum().item<double>(), 0);  // training happened

  const int64_t numel = count_parameters(*t.model);
  const auto& ar = comm.totals().at("allreduce");
  EXPECT_EQ(ar.payload_bytes, 3 * 4 * numel);
  // one allreduce per bucket per step; bus bytes are rounded per call
  EXPECT_EQ(ar.calls % 3, 0);
  EXPECT_GE(ar.bus_bytes, 3 * allreduce_bus_bytes(4 * numel, n) - ar.calls);
  EXPECT_LE(ar.bus_bytes, 3 * allreduce_bus_bytes(4 * numel, n) + ar.calls);
}

}  // namespace
}  // namespace cedar
