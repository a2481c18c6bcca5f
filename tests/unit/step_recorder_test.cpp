// The step recorder: the rows it writes from given measures (read back from the database and
// compared with values worked out by hand), its running totals counted over one rank or several,
// the epoch's training sums, the round trip of its totals through a checkpoint, and the dense
// equivalent from a model's shapes.
#include "runner/train/step_recorder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/model.h"
#include "runner/train/evaluator.h"
#include "tests/unit/sqlite_query.h"

namespace cedar {
namespace {

using testing_sql::query;
using testing_sql::query_text;

struct Database {
  explicit Database(const std::string& name)
      : path((std::filesystem::path(::testing::TempDir()) / name).string()) {
    std::filesystem::remove(path);
    store = std::make_unique<ResultStore>(path);
    RunRecord r;
    r.name = name;
    run_id = store->begin_run(r);
  }
  // The first column of `sql` about this run's rows, after the pending rows are written.
  double value(const std::string& sql) {
    store->flush();
    return query(path, sql);
  }
  std::string path;
  std::unique_ptr<ResultStore> store;
  int64_t run_id = 0;
};

StepMeasures measures(int64_t step, int64_t payload, double loss_sum, double correct,
                      double count) {
  StepMeasures m;
  m.step = step;
  m.epoch = 0;
  m.payload_bytes = payload;
  m.bus_bytes = 2 * payload;
  m.payload_bytes_all = 3 * payload;
  m.counted_payload_bytes = payload;
  m.counted_bus_bytes = 2 * payload;
  m.loss_sum = loss_sum;
  m.correct = correct;
  m.count = count;
  return m;
}

TEST(StepRecorder, WritesTheRowOfTheMeasuresWithTheTotalsSoFar) {
  Database db("step_recorder_row.db");
  StepRecorder rec(db.store.get(), db.run_id, /*dense_bytes=*/4000, /*ranks_counted=*/1);
  rec.start_clock();
  rec.record_step(measures(0, 100, 6.0, 2, 4));
  StepMeasures m = measures(1, 250, 3.0, 3, 4);
  m.epoch = 1;
  m.compute_seconds = 0.25;
  m.comm_seconds = 0.125;
  m.latency_steps = 7;
  m.modeled_comm_seconds = 0.5;
  m.learning_rate = 0.05;
  m.stats = {{"staleness", 2}, {"gradients", 1}};
  m.levels.push_back({"intra", "nvlink", 2, 3, 40, 60, 5, 0.001});
  rec.record_step(m);

  const std::string row = " FROM steps WHERE step = 1";
  EXPECT_EQ(db.value("SELECT epoch" + row), 1);
  EXPECT_EQ(db.value("SELECT payload_bytes" + row), 250);
  EXPECT_EQ(db.value("SELECT bus_bytes" + row), 500);
  EXPECT_EQ(db.value("SELECT payload_bytes_all" + row), 750);
  EXPECT_EQ(db.value("SELECT cum_payload_bytes" + row), 100 + 250);
  EXPECT_EQ(db.value("SELECT cum_bus_bytes" + row), 200 + 500);
  EXPECT_EQ(db.value("SELECT dense_bytes" + row), 4000);
  EXPECT_EQ(db.value("SELECT train_loss" + row), 3.0 / 4);
  EXPECT_EQ(db.value("SELECT train_accuracy" + row), 3.0 / 4);
  EXPECT_EQ(db.value("SELECT learning_rate" + row), 0.05);
  EXPECT_EQ(db.value("SELECT compute_seconds" + row), 0.25);
  EXPECT_EQ(db.value("SELECT comm_seconds" + row), 0.125);
  EXPECT_EQ(db.value("SELECT latency_steps" + row), 7);
  EXPECT_EQ(db.value("SELECT modeled_comm_seconds" + row), 0.5);
  EXPECT_GE(db.value("SELECT wall_seconds" + row), 0);
  EXPECT_EQ(db.value("SELECT cum_payload_bytes FROM steps WHERE step = 0"), 100);
  EXPECT_EQ(db.value("SELECT value FROM step_stats WHERE step = 1 AND key = 'staleness'"), 2);
  EXPECT_EQ(db.value("SELECT COUNT(*) FROM step_stats WHERE step = 1"), 2);
  EXPECT_EQ(db.value("SELECT COUNT(*) FROM step_stats WHERE step = 0"), 0);
  EXPECT_EQ(query_text(db.path, "SELECT profile FROM step_levels WHERE step = 1"), "nvlink");
  EXPECT_EQ(db.value("SELECT bus_bytes FROM step_levels WHERE step = 1 AND level = 'intra'"), 60);

  EXPECT_EQ(rec.cum_payload_bytes(), 350);
  EXPECT_EQ(rec.cum_bus_bytes(), 700);
  EXPECT_EQ(rec.epoch_sums().loss_sum, 9.0);
  EXPECT_EQ(rec.epoch_sums().correct, 5.0);
  EXPECT_EQ(rec.epoch_sums().count, 8.0);
}

// A step skipped by fp16 loss scaling: its loss (inf, or NaN as a mean) stays out of the epoch's
// sums, its row says +inf, its bytes still count.
TEST(StepRecorder, ALossThatIsNotFiniteStaysOutOfTheEpochSums) {
  Database db("step_recorder_skip.db");
  StepRecorder rec(db.store.get(), db.run_id, 0, 1);
  rec.record_step(measures(0, 10, 2.0, 1, 2));
  rec.record_step(measures(1, 10, NAN, 0, 2));
  rec.record_step(measures(2, 10, INFINITY, 0, 2));
  EXPECT_EQ(rec.epoch_sums().loss_sum, 2.0);
  EXPECT_EQ(rec.epoch_sums().count, 2.0);
  EXPECT_EQ(rec.cum_payload_bytes(), 30);
  EXPECT_TRUE(std::isinf(db.value("SELECT train_loss FROM steps WHERE step = 1")));
  EXPECT_TRUE(std::isinf(db.value("SELECT train_loss FROM steps WHERE step = 2")));
}

// Totals over 3 ranks' traffic, stated per rank and rounded to the byte: 1000 / 3 = 333.3 -> 333,
// (1000 + 1001) / 3 = 667, (2001 + 1) / 3 = 667.3 -> 667.
TEST(StepRecorder, TotalsOverSeveralRanksAreStatedPerRank) {
  Database db("step_recorder_ranks.db");
  StepRecorder rec(db.store.get(), db.run_id, 0, /*ranks_counted=*/3);
  rec.record_step(measures(0, 1000, 1, 1, 1));
  EXPECT_EQ(rec.cum_payload_bytes(), 333);
  rec.record_step(measures(1, 1001, 1, 1, 1));
  EXPECT_EQ(rec.cum_payload_bytes(), 667);
  rec.record_step(measures(2, 1, 1, 1, 1));
  EXPECT_EQ(rec.counted_payload_bytes(), 2002);
  EXPECT_EQ(rec.cum_payload_bytes(), 667);
  EXPECT_EQ(rec.cum_bus_bytes(), 1335);  // 4004 / 3 = 1334.67
  EXPECT_EQ(db.value("SELECT cum_payload_bytes FROM steps WHERE step = 0"), 333);
  EXPECT_EQ(db.value("SELECT cum_payload_bytes FROM steps WHERE step = 1"), 667);
  EXPECT_EQ(rec.summary().total_payload_bytes, 667);
  EXPECT_EQ(rec.summary().total_bus_bytes, 1335);
  EXPECT_THROW(StepRecorder(nullptr, 0, 0, 0), std::invalid_argument);
}

TEST(StepRecorder, EvaluationsStateTheEpochSumsAndKeepTheBestAccuracy) {
  Database db("step_recorder_eval.db");
  StepRecorder rec(db.store.get(), db.run_id, 0, 1);
  rec.record_step(measures(0, 5, 3.0, 1, 4));
  rec.record_step(measures(1, 5, 1.0, 3, 4));
  EvalResult r;
  r.loss = 0.5;
  r.accuracy = 0.8;
  r.consensus_distance = 0.125;
  rec.record_eval(r, 2, 0.5);
  const std::string first = " FROM evals WHERE step = 2";
  EXPECT_EQ(db.value("SELECT epoch" + first), 0.5);
  EXPECT_EQ(db.value("SELECT cum_payload_bytes" + first), 10);
  EXPECT_EQ(db.value("SELECT cum_bus_bytes" + first), 20);
  EXPECT_EQ(db.value("SELECT test_loss" + first), 0.5);
  EXPECT_EQ(db.value("SELECT test_accuracy" + first), 0.8);
  EXPECT_EQ(db.value("SELECT train_loss" + first), 4.0 / 8);
  EXPECT_EQ(db.value("SELECT train_accuracy" + first), 4.0 / 8);
  EXPECT_EQ(db.value("SELECT consensus_distance" + first), 0.125);

  rec.start_epoch();
  rec.record_step(measures(2, 5, 2.0, 4, 4));
  r.accuracy = 0.6;
  rec.record_eval(r, 3, 1.0);
  EXPECT_EQ(db.value("SELECT train_loss FROM evals WHERE step = 3"), 2.0 / 4);
  EXPECT_EQ(db.value("SELECT train_accuracy FROM evals WHERE step = 3"), 1.0);
  EXPECT_EQ(rec.last_accuracy(), 0.6);
  EXPECT_EQ(rec.best_accuracy(), 0.8);
  const RunSummary s = rec.summary();
  EXPECT_EQ(s.final_test_accuracy, 0.6);
  EXPECT_EQ(s.best_test_accuracy, 0.8);
  EXPECT_EQ(s.total_payload_bytes, 15);
}

// Saved mid-epoch and restored into a fresh recorder, the totals go on as if nothing stopped:
// the next rows are the same, and so is the seconds' count (it goes on from the saved one).
TEST(StepRecorder, ACheckpointRoundTripContinuesTheTotals) {
  Database db("step_recorder_checkpoint.db");
  StepRecorder first(db.store.get(), db.run_id, 0, 2);
  first.start_clock();
  first.record_step(measures(0, 301, 2.0, 1, 2));
  EvalResult r;
  r.accuracy = 0.75;
  first.record_eval(r, 1, 0.5);
  first.start_epoch();
  first.record_step(measures(1, 300, 1.5, 2, 2));
  TensorMap state;
  first.save(state, "test.recorder");
  const double saved_seconds = state.at("test.recorder")[7].item<double>();

  StepRecorder resumed(nullptr, 0, 0, 2);
  resumed.start_clock();
  resumed.restore(state, "test.recorder");
  EXPECT_EQ(resumed.counted_payload_bytes(), 601);
  EXPECT_EQ(resumed.cum_payload_bytes(), 301);  // 601 / 2 = 300.5, rounded away from zero
  EXPECT_EQ(resumed.cum_bus_bytes(), 601);
  EXPECT_EQ(resumed.epoch_sums().loss_sum, 1.5);
  EXPECT_EQ(resumed.epoch_sums().correct, 2.0);
  EXPECT_EQ(resumed.epoch_sums().count, 2.0);
  EXPECT_EQ(resumed.last_accuracy(), 0.75);
  EXPECT_EQ(resumed.best_accuracy(), 0.75);
  EXPECT_GE(resumed.elapsed_seconds(), saved_seconds);
  EXPECT_LT(resumed.elapsed_seconds(), saved_seconds + 60);

  first.record_step(measures(2, 7, 1.0, 1, 2));
  resumed.record_step(measures(2, 7, 1.0, 1, 2));
  EXPECT_EQ(resumed.cum_payload_bytes(), first.cum_payload_bytes());
  EXPECT_EQ(resumed.cum_bus_bytes(), first.cum_bus_bytes());
  EXPECT_EQ(resumed.epoch_sums().loss_sum, first.epoch_sums().loss_sum);
  EXPECT_EQ(resumed.epoch_sums().count, first.epoch_sums().count);
}

// LeNet-5 on 1x28x28 (padding 2): conv 1->6 5x5 (150 + 6), conv 6->16 5x5 (2,400 + 16),
// fc 400->120 (48,000 + 120), fc 120->84 (10,080 + 84), fc 84->10 (840 + 10): 61,706 parameters.
TEST(StepRecorder, TheDenseEquivalentIsFourBytesPerParameter) {
  ModelSpec spec;
  spec.name = "lenet5";
  spec.in_channels = 1;
  spec.num_classes = 10;
  spec.image_size = 28;
  EXPECT_EQ(fp32_parameter_bytes(*make_model(spec)), 4 * 61706);
}

TEST(StepRecorder, ACheckpointWithoutItsTotalsIsAClearError) {
  StepRecorder rec(nullptr, 0, 0, 1);
  const auto message = [&](const TensorMap& state) -> std::string {
    try {
      rec.restore(state, "trainer.recorder");
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({}).find("'trainer.recorder'"), std::string::npos) << message({});
  const TensorMap short_state{{"trainer.recorder", torch::zeros({7}, torch::kDouble)}};
  EXPECT_NE(message(short_state).find("'trainer.recorder' is not 8 doubles"), std::string::npos)
      << message(short_state);
  const TensorMap floats{{"trainer.recorder", torch::zeros({8}, torch::kFloat)}};
  EXPECT_NE(message(floats).find("is not 8 doubles"), std::string::npos) << message(floats);
}

}  // namespace
}  // namespace cedar
