// The parameter server with batch norm (runner/ps/worker_buffers.h): the workers' buffers
// averaged as written here, and a whole bsp run of ResNet-20 on in-process ranks (two workers,
// one or two servers) against dense all-reduce SGD on two ranks through the trainer: the same
// final parameters and, in rank 0's final model, the average of the dense ranks' buffers, bitwise.
// At two workers the allreduce (in-process here, MPI's in a run) and the server (in worker order)
// add the same two numbers, and a + b = b + a in floating point, so the arithmetic is the same;
// at more workers the two sums may be taken in different orders, which rounds differently.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/parameter_server.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "comm/run_network_profiles.h"
#include "runner/ps/run.h"
#include "runner/ps/worker_buffers.h"
#include "runner/train/trainer.h"
#include "tests/mpi/synthetic_training.h"

namespace cedar {
namespace {

// A model with one fp32 buffer of 3 and one int64 buffer, and a parameter.
struct TwoBuffers : Model {
  TwoBuffers() {
    w = register_parameter("w", torch::zeros({2}));
    mean = register_buffer("mean", torch::zeros({3}));
    count = register_buffer("count", torch::zeros({}, torch::kLong));
  }
  torch::Tensor forward(torch::Tensor x) override { return x; }
  torch::Tensor w, mean, count;
};

void set(TwoBuffers& m, std::vector<float> mean, int64_t count) {
  torch::NoGradGuard no_grad;
  m.mean.copy_(torch::tensor(mean));
  m.count.fill_(count);
}

TEST(WorkerBuffers, AveragesFloatBuffersOverWorkersAndTakesWorker0sCounts) {
  TwoBuffers model;
  WorkerBuffers buffers(model, 3);
  EXPECT_EQ(buffers.words(), 4) << "3 statistics and a count";
  TwoBuffers w0, w1;
  set(w0, {1.0f, 2.0f, -4.0f}, 7);
  set(w1, {3.0f, 0.5f, 4.0f}, 9);
  buffers.receive(0, WorkerBuffers::pack(w0).data_ptr<double>());
  buffers.receive(1, WorkerBuffers::pack(w1).data_ptr<double>());
  // Worker 2 has sent nothing: it counts with the initial buffers (zeros, count 0).
  buffers.average_into(model);
  EXPECT_TRUE(torch::equal(model.mean, torch::tensor({4.0f / 3, 2.5f / 3, 0.0f}))) << model.mean;
  EXPECT_EQ(model.count.item<int64_t>(), 7);

  // A checkpoint carries every worker's latest buffers.
  TensorMap state;
  buffers.save(state, "b.");
  WorkerBuffers resumed(w0, 3);
  set(w0, {9.0f, 9.0f, 9.0f}, 1);
  resumed.restore(state, "b.");
  TwoBuffers out;
  resumed.average_into(out);
  EXPECT_TRUE(torch::equal(out.mean, model.mean));
  EXPECT_EQ(out.count.item<int64_t>(), 7);

  state["b.1"] = torch::zeros({3}, torch::kDouble);
  try {
    resumed.restore(state, "b.");
    FAIL() << "a checkpoint of other buffers is refused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'b.1'"), std::string::npos) << e.what();
  }
}

constexpr int64_t kSteps = 6;  // 64 images / (2 workers x 8) = 4 steps per epoch: two evaluations

testing::SyntheticTraining resnet20() {
  testing::SyntheticTraining t = testing::synthetic_resnet20(kSteps, 64, 32, 11);
  t.cfg.data.augment = false;
  t.cfg.data.prefetch = 0;
  t.cfg.optimizer.schedule = "constant";
  t.cfg.optimizer.lr = 0.05;
  t.cfg.train.seed = 5;
  t.cfg.train.epochs = 2;
  return t;
}

struct Final {
  std::vector<torch::Tensor> params, buffers;
};

Final final_of(Model& m) {
  Final f;
  for (const auto& p : m.parameters()) f.params.push_back(p.detach().clone());
  for (const auto& b : m.buffers()) f.buffers.push_back(b.clone());
  return f;
}

// Dense all-reduce SGD on two in-process ranks through the trainer: each rank's final model.
std::vector<Final> dense_on_two_ranks() {
  std::vector<testing::SyntheticTraining> runs;
  for (int r = 0; r < 2; ++r) runs.push_back(resnet20());  // one by one: one global generator
  std::vector<Final> out(2);
  InProcessWorld world(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      testing::SyntheticTraining& t = runs[static_cast<size_t>(r)];
      t.cfg.algorithm = "dense";
      InProcessCommunicator inner(world, r);
      MeteredCommunicator comm(inner);
      Trainer trainer(t.cfg, run_network_profiles(t.cfg), t.model, t.data,
                      find_algorithm("dense").make(YAML::Node(), Source{}, nullptr), comm, inner,
                      nullptr, -1, torch::Device(torch::kCPU), true);
      trainer.run();
      out[static_cast<size_t>(r)] = final_of(*t.model);
    });
  for (auto& th : threads) th.join();
  return out;
}

// bsp with `servers` servers and two workers: rank 0's final model.
Final ps_bsp(int servers) {
  const int ranks = servers + 2;
  std::vector<testing::SyntheticTraining> runs;
  for (int r = 0; r < ranks; ++r) runs.push_back(resnet20());
  ParameterServerParams ps;
  ps.mode = "bsp";
  ps.servers = servers;
  Final out;
  InProcessWorld world(ranks), control_world(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      testing::SyntheticTraining& t = runs[static_cast<size_t>(r)];
      t.cfg.algorithm = "ps";
      InProcessCommunicator inner(world, r), control(control_world, r);
      MeteredCommunicator comm(inner);
      check_parameter_server_run(t.cfg, ps, ranks, *t.model);
      run_parameter_server(PsRunInputs{t.cfg, ps, t.model, t.data, comm, control, nullptr, -1,
                                       torch::Device(torch::kCPU), true, nullptr, -1});
      if (r == 0) out = final_of(*t.model);
    });
  for (auto& th : threads) th.join();
  return out;
}

TEST(PsBatchNorm, BspEqualsDenseAllReduceWithTheAveragedBuffersBitwise) {
  const std::vector<Final> dense = dense_on_two_ranks();
  ASSERT_FALSE(dense[0].buffers.empty()) << "ResNet-20 has batch-norm statistics";
  // The average dense's evaluation computes: the sum of the two ranks' buffers, halved.
  std::vector<torch::Tensor> averaged;
  bool ranks_differ = false, moved = false;
  const Final initial = final_of(*resnet20().model);
  for (size_t i = 0; i < dense[0].buffers.size(); ++i) {
    const torch::Tensor& a = dense[0].buffers[i];
    const torch::Tensor& b = dense[1].buffers[i];
    if (!a.is_floating_point()) {
      EXPECT_EQ(a.item<int64_t>(), kSteps) << "num_batches_tracked";
      averaged.push_back(a);
      continue;
    }
    ranks_differ = ranks_differ || !torch::equal(a, b);
    moved = moved || !torch::equal(a, initial.buffers[i]);
    averaged.push_back((a + b) / 2.0);
  }
  ASSERT_TRUE(ranks_differ) << "each rank's statistics are of its own batches";
  ASSERT_TRUE(moved) << "the forward passes updated the statistics";
  for (size_t i = 0; i < dense[0].params.size(); ++i)
    ASSERT_TRUE(torch::equal(dense[0].params[i], dense[1].params[i])) << "dense ranks agree";

  for (int servers : {1, 2}) {
    const Final ps = ps_bsp(servers);
    ASSERT_EQ(ps.params.size(), dense[0].params.size());
    for (size_t i = 0; i < ps.params.size(); ++i)
      EXPECT_TRUE(torch::equal(ps.params[i], dense[0].params[i]))
          << servers << " server(s): parameter " << i << " differs from dense's";
    ASSERT_EQ(ps.buffers.size(), averaged.size());
    for (size_t i = 0; i < ps.buffers.size(); ++i)
      EXPECT_TRUE(torch::equal(ps.buffers[i], averaged[i]))
          << servers << " server(s): buffer " << i << " is not the workers' average";
  }
}

}  // namespace
}  // namespace cedar
