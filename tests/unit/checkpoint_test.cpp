// Checkpoints: the folder protocol (nothing is a checkpoint until every rank wrote and rank 0
// committed; older files go), the loader's position, and every registered algorithm's state:
// stopping after k steps and continuing from the saved state gives bitwise the same results as
// not stopping.
#include "runner/train/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "algorithms/algorithm.h"
#include "comm/inprocess_communicator.h"
#include "datasets/loader.h"
#include "runner/train/mixed_precision.h"
#include "tests/unit/algorithm_harness.h"
#include "tests/unit/amp_training.h"
#include "tests/unit/sqlite_query.h"
#include "tests/unit/testdata_writers.h"

namespace cedar {
namespace {

TEST(CheckpointDir, ACheckpointExistsOnlyAfterCommitAndOlderFilesGo) {
  const testdata::TempDir tmp("ckpt");
  const std::string dir = tmp.str() + "/run-1";
  CheckpointDir r0(dir, 0, 2), r1(dir, 1, 2);
  r0.prepare();
  EXPECT_EQ(r0.latest(), -1);
  r0.write(4, {{"x", torch::arange(3)}});
  r1.write(4, {{"x", torch::arange(3) + 10}});
  EXPECT_EQ(r0.latest(), -1) << "written but not committed";
  r0.commit(4);
  EXPECT_EQ(r1.latest(), 4);
  r0.write(8, {{"x", torch::ones({2})}});
  EXPECT_EQ(r1.latest(), 4) << "a crash between the ranks' writes leaves the previous checkpoint";
  r1.write(8, {{"x", torch::zeros({2})}});
  r0.commit(8);
  EXPECT_EQ(r0.latest(), 8);
  EXPECT_TRUE(torch::equal(r1.read(8).at("x"), torch::zeros({2})));
  EXPECT_NE(::access((dir + "/rank-0.step-4.pt").c_str(), F_OK), 0) << "step 4 removed";
  try {
    r0.read(4);
    FAIL() << "reading a removed checkpoint must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/rank-0.step-4.pt"), std::string::npos) << e.what();
  }
  CheckpointDir other(dir, 0, 4);
  try {
    other.latest();
    FAIL() << "a checkpoint of 2 ranks must not resume 4";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("written by 2 ranks"), std::string::npos) << e.what();
  }
  r0.remove();
  EXPECT_EQ(r0.latest(), -1);
}

TEST(CheckpointDir, UnwritableFolderIsAClearError) {
  CheckpointDir dir("/proc/cedar-checkpoints/run-1", 0, 1);
  try {
    dir.prepare();
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/cedar-checkpoints"), std::string::npos) << e.what();
  }
}

// fp16 loss scaling: the scale and its growth count go through a checkpoint file, and the
// restored scaler continues the same sequence.
TEST(LossScalerState, RoundTripsThroughACheckpointFile) {
  LossScalerOptions o;
  o.growth_interval = 3;
  LossScaler saved(torch::Device(torch::kCPU), o);
  for (bool inf : {true, false, false, false, true, false}) saved.update(inf);
  const double scale = saved.scale_value();  // 2^16 / 2 * 2 / 2
  ASSERT_EQ(scale, 32768.0);
  ASSERT_EQ(saved.growth_tracker(), 1);
  const testdata::TempDir tmp("ckpt");
  const std::string dir = tmp.str() + "/run-1";
  CheckpointDir ckpt(dir, 0, 1);
  ckpt.prepare();
  TensorMap state;
  saved.save(state);
  ckpt.write(6, state);
  ckpt.commit(6);
  LossScaler restored(torch::Device(torch::kCPU), o);
  restored.load(ckpt.read(6));
  EXPECT_EQ(restored.scale_value(), scale);
  EXPECT_EQ(restored.growth_tracker(), 1);
  for (bool inf : {false, false, true, false, false, false}) {
    saved.update(inf);
    restored.update(inf);
    EXPECT_EQ(restored.scale_value(), saved.scale_value());
    EXPECT_EQ(restored.growth_tracker(), saved.growth_tracker());
  }
  try {
    LossScaler(torch::Device(torch::kCPU)).load(TensorMap{{"model.param.w", torch::zeros({1})}});
    FAIL() << "a checkpoint without the scaler's state must not resume an fp16 run";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'amp.scale'"), std::string::npos) << e.what();
  }
  ckpt.remove();
}

// The trainer saves the scaler in its checkpoints: an fp16 run whose step 1 overflowed (scale
// 2^16 -> 2^15), resumed from step 2, goes on at 2^15 and ends bitwise where the run that was
// not stopped ends.
TEST(LossScalerState, ResumedFp16RunContinuesAtTheSavedScale) {
  const testdata::TempDir tmp_dir("ckpt");
  const std::string tmp = tmp_dir.str();
  InProcessWorld world(1);
  InProcessCommunicator comm(world, 0);
  CheckpointDir ckpt(tmp + "/run", 0, 1);
  ckpt.prepare();
  auto through = testing::amp_run("fp16", 4);
  through.cfg.train.checkpoint_every_steps = 2;
  through.model->poison_at = {1};
  testing::train_amp(through, comm, nullptr, -1, &ckpt, -1);
  ASSERT_EQ(ckpt.latest(), 2);

  const std::string db = tmp + "/resumed.db";
  auto resumed = testing::amp_run("fp16", 4, /*seed=*/99);
  {
    ResultStore store(db);
    RunRecord rec;
    rec.name = "resumed";
    const int64_t id = store.begin_run(rec);
    testing::train_amp(resumed, comm, &store, id, &ckpt, 2);
    store.flush();
  }
  const std::string scale = "SELECT value FROM step_stats WHERE key = 'amp_loss_scale' AND step = ";
  EXPECT_EQ(testing_sql::query(db, scale + "2"), 32768.0);
  EXPECT_EQ(testing_sql::query(db, scale + "3"), 32768.0);
  auto a = through.model->parameters(), b = resumed.model->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
  ckpt.remove();
}

// A checkpoint written before the trainer's step recorder had its own entry keeps the totals in
// trainer.numbers (15 numbers); it still resumes, each total read from its place. The totals put
// there are ones no run of 2 steps reaches, so the resumed rows and summary show where they came
// from.
TEST(TrainerCheckpoint, ACheckpointOfFifteenNumbersResumesWithItsTotals) {
  const testdata::TempDir tmp_dir("ckpt");
  const std::string tmp = tmp_dir.str();
  InProcessWorld world(1);
  InProcessCommunicator comm(world, 0);
  CheckpointDir ckpt(tmp + "/run", 0, 1);
  ckpt.prepare();
  auto through = testing::amp_run("off", 4);
  through.cfg.train.checkpoint_every_steps = 2;
  testing::train_amp(through, comm, nullptr, -1, &ckpt, -1);
  ASSERT_EQ(ckpt.latest(), 2);
  TensorMap state = ckpt.read(2);
  const at::Tensor n = state.at("trainer.numbers");
  ASSERT_EQ(n.numel(), 4);
  ASSERT_EQ(state.count("trainer.recorder"), 1u);
  // step, the loader's epoch and cursor, cumulative payload and bus bytes, best and last test
  // accuracy, target reached, seconds of training, the epoch's loss sum, correct and count, then
  // compute and communication seconds and steps.
  state["trainer.numbers"] =
      torch::tensor({2.0, n[1].item<double>(), n[2].item<double>(), 1000.0, 3000.0, 2.0, 1.5, 0.0,
                     50.0, 5e6, 0.0, 1e6, 0.0, 0.0, 2.0},
                    torch::kDouble);
  state.erase("trainer.recorder");
  ckpt.write(2, state);

  const std::string db = tmp + "/legacy.db";
  auto resumed = testing::amp_run("off", 4);
  RunSummary summary;
  {
    ResultStore store(db);
    RunRecord rec;
    rec.name = "legacy";
    const int64_t id = store.begin_run(rec);
    summary = testing::train_amp(resumed, comm, &store, id, &ckpt, 2);
    store.flush();
  }
  EXPECT_EQ(testing_sql::query(db,
                               "SELECT cum_payload_bytes - payload_bytes FROM steps "
                               "WHERE step = 2"),
            1000);
  EXPECT_EQ(testing_sql::query(db, "SELECT cum_bus_bytes - bus_bytes FROM steps WHERE step = 2"),
            3000);
  EXPECT_GE(testing_sql::query(db, "SELECT wall_seconds FROM steps WHERE step = 2"), 50.0);
  // The last evaluation's training loss: (5e6 + 2 steps' loss sums) / (1e6 + 32 samples).
  EXPECT_NEAR(testing_sql::query(db, "SELECT train_loss FROM evals WHERE step = 4"), 5.0, 1e-3);
  EXPECT_LT(testing_sql::query(db, "SELECT train_accuracy FROM evals WHERE step = 4"), 1e-4);
  EXPECT_EQ(summary.best_test_accuracy, 2.0);
  EXPECT_EQ(summary.total_payload_bytes,
            1000 + static_cast<int64_t>(testing_sql::query(db,
                                                           "SELECT SUM(payload_bytes) FROM "
                                                           "steps")));
  ckpt.remove();
}

TEST(LoaderPosition, RestoredLoaderServesTheSameBatches) {
  DatasetSpec spec;
  spec.name = "synthetic";
  spec.synthetic_train = 256;
  spec.synthetic_test = 16;
  spec.image_size = 12;
  spec.seed = 3;
  LoadedDataset data = load_dataset(spec);
  Augmentation aug{2, true};
  ShardedLoader a(data.train, data.norm, aug, 8, 1, 2, 5, true, true);
  a.start_epoch(2);
  Batch b;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.next(b));
  const LoaderPosition pos = a.position();
  std::vector<torch::Tensor> expected;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.next(b));
    expected.push_back(b.images.clone());
  }
  ShardedLoader c(data.train, data.norm, aug, 8, 1, 2, 5, true, true);
  c.restore(pos);
  for (int i = 0; i < 3; ++i) {
    Batch x;
    ASSERT_TRUE(c.next(x));
    EXPECT_TRUE(torch::equal(x.images, expected[static_cast<size_t>(i)])) << "batch " << i;
  }
  EXPECT_THROW(c.restore({2, 100000, ""}), std::invalid_argument);
}

// Runs steps [from, to) of a toy training loop on this rank: seeded gradients for two parameters
// (a matrix, so PowerSGD compresses it, and a vector), the algorithm's exchange, a plain SGD
// update, after_step. Returns each step's reduced gradient concatenated with the parameters.
std::vector<torch::Tensor> run_steps(Algorithm& alg, std::vector<NamedTensor>& params,
                                     Communicator& comm, int64_t from, int64_t to) {
  testing::StepOptions options;
  options.seed = 9;
  // A changing lr (error-feedback rescaling) and epochs of 4 steps.
  options.lr_schedule = [](int64_t step) { return 0.1 * (1.0 + 0.1 * static_cast<double>(step)); };
  options.configure = [](StepContext& ctx) {
    ctx.epoch = ctx.step / 4;
    ctx.steps_per_epoch = 4;
    ctx.base_lr = 0.1;
  };
  auto grads = [](int rank, int64_t step, const std::vector<NamedTensor>& p) {
    std::vector<torch::Tensor> g;
    for (size_t i = 0; i < p.size(); ++i) {
      auto gen = make_generator(77, rank, step, i);
      g.push_back(torch::randn(p[i].tensor.sizes(), gen) + 0.1 * p[i].tensor);
    }
    return g;
  };
  std::vector<torch::Tensor> out;
  for (const auto& step : testing::train_steps(alg, params, comm, from, to, grads, options)) {
    std::vector<torch::Tensor> parts;
    for (const auto& g : step.grads) parts.push_back(g.reshape({-1}));
    for (const auto& p : step.params) parts.push_back(p.reshape({-1}));
    out.push_back(torch::cat(parts));
  }
  return out;
}

std::vector<NamedTensor> initial_params() {
  auto gen = make_generator(5, 0, 0);
  return {{"layer.weight", torch::randn({12, 10}, gen)}, {"layer.bias", torch::randn({30}, gen)}};
}

class AlgorithmStateTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AlgorithmStateTest, ResumingFromSavedStateIsBitwiseIdentical) {
  const AlgorithmInfo& info = find_algorithm(GetParam());
  constexpr int64_t kStop = 5, kEnd = 10;
  std::mutex mu;
  std::vector<std::string> failures;
  run_ranks(2, [&](Communicator& comm) {
    torch::set_num_threads(1);
    // Uninterrupted.
    auto alg = info.make(YAML::Node(), Source{}, nullptr);
    auto params = initial_params();
    alg->setup(params, comm);
    auto expected = run_steps(*alg, params, comm, 0, kEnd);
    // Stopped after kStop steps, state saved, then a fresh instance restored from it.
    auto first = info.make(YAML::Node(), Source{}, nullptr);
    auto params2 = initial_params();
    first->setup(params2, comm);
    run_steps(*first, params2, comm, 0, kStop);
    AlgorithmState state;
    first->save_state(state);
    first.reset();
    std::vector<NamedTensor> restored;
    for (const auto& p : params2) restored.push_back({p.name, p.tensor.clone()});
    auto second = info.make(YAML::Node(), Source{}, nullptr);
    second->setup(restored, comm);
    second->load_state(state);
    auto resumed = run_steps(*second, restored, comm, kStop, kEnd);
    for (int64_t s = kStop; s < kEnd; ++s)
      if (!torch::equal(resumed[static_cast<size_t>(s - kStop)],
                        expected[static_cast<size_t>(s)])) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back("rank " + std::to_string(comm.rank()) + " step " + std::to_string(s));
      }
  });
  EXPECT_TRUE(failures.empty()) << GetParam() << " differs after resuming at " << failures.front();
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, AlgorithmStateTest,
                         ::testing::ValuesIn(gradient_algorithm_names()),
                         testing::algorithm_test_name);

}  // namespace
}  // namespace cedar
