// Dense data-parallel training on real MPI ranks: ranks start from different random weights,
// the initial broadcast and the allreduce keep them identical, and the bytes sent per step equal
// one fp32 allreduce of every gradient.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "algorithms/algorithm.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "runner/comm/bus_bytes.h"
#include "runner/comm/metered_communicator.h"
#include "runner/comm/mpi_communicator.h"
#include "runner/trainer.h"

namespace cedar {
namespace {

TEST(MpiTraining, DenseKeepsEveryRankIdenticalAndSendsDenseBytes) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const int n = comm.size();
  torch::set_num_threads(1);

  ExperimentConfig cfg;
  cfg.model.name = "resnet20";
  cfg.data.name = "synthetic";
  cfg.train.batch_size = 8;
  cfg.train.max_steps = 3;
  cfg.algorithm = "dense";
  DatasetSpec ds;
  ds.name = "synthetic";
  ds.image_size = 8;
  ds.synthetic_train = 128;
  ds.synthetic_test = 32;
  LoadedDataset data = load_dataset(ds);

  torch::manual_seed(100 + comm.rank());  // different initial weights on every rank
  ModelSpec ms;
  ms.name = "resnet20";
  ms.in_channels = data.train.channels;
  ms.num_classes = data.train.num_classes;
  ms.image_size = 8;
  auto model = make_model(ms);
  auto algorithm = find_algorithm("dense").make(YAML::Node(), Source{}, nullptr);
  Trainer trainer(cfg, model, data, std::move(algorithm), comm, mpi, nullptr, -1,
                  torch::Device(torch::kCPU), true);
  trainer.run();

  std::vector<torch::Tensor> flat;
  for (auto& p : model->parameters()) flat.push_back(p.detach().reshape({-1}));
  auto mine = torch::cat(flat);
  auto all = comm.inner().allgather(mine).view({n, -1});
  for (int r = 1; r < n; ++r) EXPECT_TRUE(torch::equal(all[r], all[0])) << "rank " << r << " differs";
  EXPECT_GT((all[0] - all[0].roll(1)).abs().sum().item<double>(), 0);  // training happened

  const int64_t numel = count_parameters(*model);
  const auto& ar = comm.totals().at("allreduce");
  EXPECT_EQ(ar.payload_bytes, 3 * 4 * numel);
  // one allreduce per bucket per step; bus bytes are rounded per call
  EXPECT_EQ(ar.calls % 3, 0);
  EXPECT_GE(ar.bus_bytes, 3 * allreduce_bus_bytes(4 * numel, n) - ar.calls);
  EXPECT_LE(ar.bus_bytes, 3 * allreduce_bus_bytes(4 * numel, n) + ar.calls);
}

}  // namespace
}  // namespace cedar
