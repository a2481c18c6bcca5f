// Local SGD / post-local SGD: H = 1 reproduces dense SGD (bit for bit when the ranks see the same
// data), ranks agree right after each sync and differ between syncs, bytes are one model-sized
// allreduce every H steps, and post-local SGD is dense before the switch step.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/compressor.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "runner/train/buckets.h"
#include "runner/train/optimizer.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {

namespace {

struct StepLog {
  std::vector<at::Tensor> params;  // all parameters flattened, after each step
  std::vector<int64_t> payload;
  std::vector<int64_t> calls;
};

struct RunOptions {
  std::string algorithm = "local-sgd";
  std::string yaml = "{}";
  int steps = 6;
  bool same_data = false;
  double momentum = 0.9;
  double first_decay_epoch = -1;
  int64_t steps_per_epoch = 100;
  std::vector<NamedTensor> extra_buffers;  // passed to after_step as the model's buffers
};

// Trains a Linear(4, 3) (identical initial weights) on every rank the way runner/train/trainer.cpp
// steps; returns each rank's log.
std::vector<StepLog> train(int n, const RunOptions& o) {
  torch::manual_seed(11);
  torch::nn::Linear init(4, 3);
  return testing::on_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    torch::nn::Linear model(4, 3);
    {
      torch::NoGradGuard g;
      model->weight.copy_(init->weight);
      model->bias.copy_(init->bias);
    }
    std::vector<NamedTensor> params;
    for (auto& p : model->named_parameters()) params.push_back({p.key(), p.value()});
    auto buckets = make_buckets(params, 1 << 20);
    std::map<std::string, at::Tensor> grad_of;
    for (auto& b : buckets)
      for (auto& e : b.entries) grad_of[e.name] = e.grad;
    std::vector<at::Tensor> grads, tensors;
    for (auto& p : params) {
      grads.push_back(grad_of.at(p.name));
      tensors.push_back(p.tensor);
    }
    OptimizerConfig cfg;
    cfg.momentum = o.momentum;
    cfg.weight_decay = 1e-2;
    SgdOptimizer opt(tensors, grads, cfg, MomentumPlan{});
    auto alg = testing::make_algorithm(o.algorithm, o.yaml);
    alg->setup(params, comm);
    std::vector<NamedTensor> buffers;
    for (const auto& b : o.extra_buffers) buffers.push_back({b.name, b.tensor.clone()});
    StepLog log;
    for (int k = 0; k < o.steps; ++k) {
      at::Generator gen = make_generator(17, o.same_data ? 0 : r, k);
      at::Tensor x = at::randn({8, 4}, gen), y = at::randn({8, 3}, gen);
      model->zero_grad();
      torch::mse_loss(model(x), y).backward();
      gather_gradients(buckets);
      StepContext ctx;
      ctx.step = k;
      ctx.steps_per_epoch = o.steps_per_epoch;
      ctx.epoch = k / o.steps_per_epoch;
      ctx.first_decay_epoch = o.first_decay_epoch;
      ctx.lr = 0.1;
      ctx.momentum_buffers = &opt.momentum_buffers();
      comm.reset_step();
      for (auto& b : buckets) alg->reduce_gradients(b, comm, ctx);
      opt.step(ctx.lr);
      alg->after_step(params, buffers, comm, ctx);
      log.params.push_back(
          torch::cat({model->weight.detach().reshape({-1}), model->bias.detach()}));
      log.payload.push_back(comm.step().payload_bytes);
      log.calls.push_back(comm.step().calls);
    }
    return log;
  });
}

constexpr int64_t kModelBytes = 4 * (4 * 3 + 3);

TEST(LocalSgd, PeriodOneWithSameDataEqualsDenseSgdBitForBit) {
  at::set_num_threads(1);
  RunOptions local;
  local.yaml = "{period: 1, post_local_switch_epoch: 0}";
  local.same_data = true;
  RunOptions dense = local;
  dense.algorithm = "dense";
  dense.yaml = "{}";
  auto a = train(2, local), b = train(2, dense);
  for (int k = 0; k < local.steps; ++k)
    for (int r = 0; r < 2; ++r) EXPECT_TRUE(torch::equal(a[r].params[k], b[r].params[k])) << k;
}

TEST(LocalSgd, PeriodOneTracksDenseSgdWithDifferentData) {
  // Different data per rank: averaging after every step is mini-batch SGD up to rounding. The
  // update is linear, so the mean of local momentum buffers follows the dense buffer exactly and
  // averaging them changes nothing at H = 1.
  for (const char* yaml : {"{period: 1, post_local_switch_epoch: 0}",
                           "{period: 1, post_local_switch_epoch: 0, average_momentum: true}"}) {
    RunOptions local;
    local.yaml = yaml;
    RunOptions dense = local;
    dense.algorithm = "dense";
    dense.yaml = "{}";
    auto a = train(2, local), b = train(2, dense);
    for (int k = 0; k < local.steps; ++k)
      EXPECT_TRUE(torch::allclose(a[0].params[k], b[0].params[k], 1e-5, 1e-6)) << yaml << " " << k;
    // ... and not trivially: the two ranks' gradients differ, so each step moves differently.
    EXPECT_FALSE(torch::allclose(a[0].params[0], train(1, local)[0].params[0], 1e-4, 1e-5));
  }
}

TEST(LocalSgd, RanksIdenticalRightAfterEachSyncAndDifferentBetween) {
  RunOptions o;
  o.yaml = "{period: 3, post_local_switch_epoch: 0}";
  o.steps = 9;
  for (int n : {2, 4}) {
    auto logs = train(n, o);
    for (int k = 0; k < o.steps; ++k) {
      bool sync = (k + 1) % 3 == 0;
      for (int r = 1; r < n; ++r) {
        EXPECT_EQ(torch::equal(logs[r].params[k], logs[0].params[k]), sync) << "step " << k;
        EXPECT_EQ(logs[r].payload[k], sync ? kModelBytes : 0);
      }
      EXPECT_EQ(logs[0].calls[k], sync ? 1 : 0);  // one fused allreduce per sync
    }
  }
}

TEST(LocalSgd, BytesIncludeMomentumAndFloatingBuffersWhenAveraged) {
  RunOptions o;
  o.yaml = "{period: 2, post_local_switch_epoch: 0, average_momentum: true, average_bn: true}";
  o.steps = 4;
  o.extra_buffers = {{"bn.running_mean", torch::zeros({5})},
                     {"bn.num_batches_tracked", torch::zeros({1}, torch::kLong)}};
  auto logs = train(2, o);
  // params + momentum buffers (same size) + the float buffer; the integer counter is not averaged.
  const int64_t sync = 2 * kModelBytes + 4 * 5;
  EXPECT_EQ(logs[1].payload, (std::vector<int64_t>{0, sync, 0, sync}));
  EXPECT_EQ(logs[1].calls, (std::vector<int64_t>{0, 1, 0, 1}));
}

TEST(LocalSgd, PostLocalIsDenseUntilTheFirstDecayThenLocal) {
  RunOptions o;
  o.yaml = "{period: 2}";  // post_local_switch_epoch -1: the first step decay
  o.steps = 8;
  o.steps_per_epoch = 4;
  o.first_decay_epoch = 1;  // switch at step 4
  auto logs = train(2, o);
  const int64_t g = kModelBytes;  // dense: one gradient allreduce of the model's size
  EXPECT_EQ(logs[0].payload, (std::vector<int64_t>{g, g, g, g, 0, g, 0, g}));
  for (int k = 0; k < 8; ++k)
    EXPECT_EQ(torch::equal(logs[0].params[k], logs[1].params[k]), k < 4 || k % 2 == 1) << k;
  // Without a step decay, -1 means local from the start.
  o.first_decay_epoch = -1;
  EXPECT_EQ(train(2, o)[0].payload, (std::vector<int64_t>{0, g, 0, g, 0, g, 0, g}));
}

}  // namespace
}  // namespace cedar
