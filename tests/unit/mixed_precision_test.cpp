// Mixed precision (train.amp): the loss scaler against GradScaler's documented rule, autocast's
// scope, and whole Trainer runs on in-process ranks: bf16 trains with its forward pass and its
// evaluation in bf16; an fp16 step with inf gradients on one rank is skipped by every rank and
// changes nothing; fp16 diverges only once the scale has backed off to 1.
#include "runner/train/mixed_precision.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "runner/train/evaluator.h"
#include "tests/unit/amp_training.h"
#include "tests/unit/sqlite_query.h"

namespace cedar {
namespace {

// torch.amp.GradScaler's update rule as its documentation states it, written out here.
struct ReferenceScaler {
  double scale = 65536.0;
  int64_t tracker = 0;
  void update(bool found_inf, int64_t interval) {
    if (found_inf) {
      scale *= 0.5;
      tracker = 0;
    } else if (++tracker == interval) {
      scale *= 2.0;
      tracker = 0;
    }
  }
};

TEST(LossScaler, DefaultsAreGradScalers) {
  LossScaler s(torch::Device(torch::kCPU));
  EXPECT_EQ(s.scale_value(), 65536.0);
  for (int i = 0; i < 1999; ++i) s.update(false);
  EXPECT_EQ(s.scale_value(), 65536.0) << "grows only after 2000 steps without inf/NaN";
  EXPECT_EQ(s.growth_tracker(), 1999);
  s.update(false);
  EXPECT_EQ(s.scale_value(), 131072.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  s.update(true);
  EXPECT_EQ(s.scale_value(), 65536.0);
}

TEST(LossScaler, ScaleSequenceFollowsTheDocumentedRule) {
  const int64_t interval = 3;
  LossScalerOptions o;
  o.growth_interval = interval;
  LossScaler s(torch::Device(torch::kCPU), o);
  ReferenceScaler ref;
  // Overflows alone, in runs, and runs of clean steps long enough to grow (twice in a row).
  const std::vector<int> found = {0, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0};
  for (size_t i = 0; i < found.size(); ++i) {
    s.update(found[i] != 0);
    ref.update(found[i] != 0, interval);
    EXPECT_EQ(s.scale_value(), ref.scale) << "after update " << i;
    EXPECT_EQ(s.growth_tracker(), ref.tracker) << "after update " << i;
  }
}

TEST(LossScaler, UnscaleGivesTheTrueGradientsAndFlagsInfAndNaN) {
  LossScaler s(torch::Device(torch::kCPU));
  auto loss = torch::tensor({0.75f});
  EXPECT_EQ(s.scale(loss).item<float>(), 0.75f * 65536.0f);
  auto a = torch::tensor({3.0f, -0.5f}) * 65536.0f;
  auto b = torch::tensor({1e-3f}) * 65536.0f;
  EXPECT_FALSE(s.unscale({a, b}));
  EXPECT_TRUE(torch::equal(a, torch::tensor({3.0f, -0.5f})));
  EXPECT_FLOAT_EQ(b.item<float>(), 1e-3f);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(s.unscale({torch::tensor({1.0f}), torch::tensor({2.0f, inf})}));
  EXPECT_TRUE(s.unscale({torch::tensor({std::nanf("")})}));
}

TEST(Autocast, GuardRunsItsScopeInItsDtypeAndRestoresTheState) {
  torch::manual_seed(1);
  torch::nn::Linear fc(4, 3);
  const auto x = torch::randn({2, 4});
  EXPECT_EQ(fc->forward(x).scalar_type(), torch::kFloat);
  {
    AutocastGuard bf16(torch::kCPU, amp_dtype("bf16"));
    EXPECT_EQ(fc->forward(x).scalar_type(), torch::kBFloat16);
    {
      AutocastGuard inner(torch::kCPU, amp_dtype("bf16"));
      EXPECT_EQ(fc->forward(x).scalar_type(), torch::kBFloat16);
    }
    EXPECT_TRUE(at::autocast::is_autocast_enabled(torch::kCPU)) << "the outer scope's state again";
    EXPECT_EQ(fc->forward(x).scalar_type(), torch::kBFloat16);
    AutocastGuard off(torch::kCPU, amp_dtype("off"));
    EXPECT_EQ(fc->forward(x).scalar_type(), torch::kBFloat16) << "off changes nothing";
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));
  EXPECT_EQ(fc->forward(x).scalar_type(), torch::kFloat);
  {
    AutocastGuard fp16(torch::kCPU, amp_dtype("fp16"));
    EXPECT_EQ(fc->forward(x).scalar_type(), torch::kHalf);
  }
  EXPECT_EQ(fc->forward(x).scalar_type(), torch::kFloat);
  EXPECT_EQ(at::autocast::get_autocast_dtype(torch::kCPU), torch::kBFloat16)
      << "the default CPU autocast dtype is restored";
  EXPECT_THROW(amp_dtype("fp8"), std::invalid_argument);
}

TEST(MixedPrecision, Bf16RunTrainsWithItsForwardAndEvaluationInBf16) {
  auto r = testing::amp_run("bf16", 60);
  InProcessWorld world(1);
  InProcessCommunicator comm(world, 0);
  const auto cpu = torch::Device(torch::kCPU);
  const double before =
      evaluate(*r.model, r.data.test, r.data.norm, 256, cpu, comm, at::kBFloat16).loss;
  r.model->eval_dtypes.clear();
  const RunSummary s = testing::train_amp(r, comm);
  const double after =
      evaluate(*r.model, r.data.test, r.data.norm, 256, cpu, comm, at::kBFloat16).loss;
  EXPECT_LT(after, 0.7 * before) << "test loss " << before << " -> " << after;
  EXPECT_GT(s.final_test_accuracy, 0.5) << "10 classes: chance is 0.1";
  EXPECT_EQ(r.model->train_dtypes, std::set<at::ScalarType>{at::kBFloat16});
  EXPECT_EQ(r.model->eval_dtypes, std::set<at::ScalarType>{at::kBFloat16})
      << "the trainer's evaluation runs the model as trained";

  auto fp32 = testing::amp_run("off", 2);
  testing::train_amp(fp32, comm);
  EXPECT_EQ(fp32.model->train_dtypes, std::set<at::ScalarType>{at::kFloat});
  EXPECT_EQ(fp32.model->eval_dtypes, std::set<at::ScalarType>{at::kFloat});
}

// Both ranks' flattened parameters after training `steps` fp16 steps, rank 1 poisoning the
// gradient of its training forward passes `poison`; rank 0 records steps in `db` (when not empty).
std::vector<torch::Tensor> fp16_on_two_ranks(int64_t steps, std::set<int64_t> poison,
                                             const std::string& db) {
  InProcessWorld world(2);
  std::vector<torch::Tensor> params(2);
  // Built here, one after the other: both seed the process's one default generator.
  std::vector<testing::AmpRun> runs;
  for (int rank = 0; rank < 2; ++rank) runs.push_back(testing::amp_run("fp16", steps, 7 + rank));
  runs[1].model->poison_at = poison;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      testing::AmpRun& r = runs[static_cast<size_t>(rank)];
      InProcessCommunicator comm(world, rank);
      std::unique_ptr<ResultStore> store;
      int64_t id = -1;
      if (rank == 0 && !db.empty()) {
        store = std::make_unique<ResultStore>(db);
        RunRecord rec;
        rec.name = "fp16";
        id = store->begin_run(rec);
      }
      testing::train_amp(r, comm, store.get(), id);
      if (store) store->flush();
      std::vector<torch::Tensor> flat;
      for (auto& p : r.model->parameters()) flat.push_back(p.detach().reshape({-1}));
      params[static_cast<size_t>(rank)] = torch::cat(flat);
    });
  for (auto& t : threads) t.join();
  return params;
}

TEST(MixedPrecision, Fp16StepWithInfOnOneRankIsSkippedByEveryRank) {
  const std::string db = ::testing::TempDir() + "/amp_skip_" + std::to_string(::getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db + suffix).c_str());
  const auto two_steps = fp16_on_two_ranks(2, {}, "");
  const auto skipped_third = fp16_on_two_ranks(3, {2}, db);
  for (size_t r = 0; r < 2; ++r)
    EXPECT_TRUE(torch::equal(skipped_third[r], two_steps[r]))
        << "rank " << r << ": the skipped step changed the parameters";
  EXPECT_TRUE(torch::equal(skipped_third[0], skipped_third[1])) << "the ranks disagree";
  const std::string stat = "SELECT value FROM step_stats WHERE key = ";
  EXPECT_EQ(testing_sql::query(db, stat + "'amp_skipped' AND step = 2"), 1.0);
  EXPECT_EQ(testing_sql::query(db, stat + "'amp_skipped' AND step = 1"), 0.0);
  EXPECT_EQ(testing_sql::query(db, stat + "'amp_loss_scale' AND step = 2"), 65536.0);
}

TEST(MixedPrecision, Fp16DivergesOnlyAfterBackingOffToScaleOne) {
  InProcessWorld world(1);
  InProcessCommunicator comm(world, 0);
  auto r = testing::amp_run("fp16", 40);
  r.model->poison_all = true;
  std::string message;
  try {
    testing::train_amp(r, comm);
  } catch (const Diverged& e) {
    message = e.what();
  }
  // Steps 0..15 run at 2^16 .. 2^1 and are skipped; step 16, at scale 1, is divergence.
  EXPECT_NE(message.find("step 16: the gradients are not finite (NaN/Inf) at fp16 loss scale 1"),
            std::string::npos)
      << message;

  // Without loss scaling the first non-finite update is divergence, as in fp32.
  auto bf16 = testing::amp_run("bf16", 40);
  bf16.model->poison_all = true;
  message.clear();
  try {
    testing::train_amp(bf16, comm);
  } catch (const Diverged& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("step 0: the update of"), std::string::npos) << message;
}

}  // namespace
}  // namespace cedar
