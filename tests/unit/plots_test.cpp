// The plots' data files: accuracy against wall-clock takes its seconds from the seeds timed on a
// quiet host where a run has any (as the comparison table does); accuracy and bytes from every
// seed. Written without gnuplot (render false).
#include "reports/plots.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "results/store.h"
#include "tests/unit/testdata_writers.h"

namespace cedar {
namespace {

// One completed run of "dense" with a single evaluation at epoch 1.
void write_seed(ResultStore& store, int64_t seed, double wall, double accuracy, double load) {
  RunRecord rec;
  rec.suite = "s";
  rec.name = rec.algorithm = "dense";
  rec.model = "lenet5";
  rec.dataset = "fashion-mnist";
  rec.world_size = 2;
  rec.seed = seed;
  rec.config = "name: dense";
  rec.config_hash = "h" + std::to_string(seed);
  rec.code_version = rec.host = rec.backend = rec.network = "test";
  if (load >= 0)
    rec.provenance = "{\"machine_load\": {\"max_other_share\": " + std::to_string(load) + "}}";
  const int64_t id = store.begin_run(rec);
  StepRow step;
  step.step = 1;
  step.epoch = 0;
  step.train_loss = 1.0;
  store.add_step(id, step);
  EvalRow eval;
  eval.step = 1;
  eval.epoch = 1;
  eval.wall_seconds = wall;
  eval.cum_payload_bytes = 2'000'000;
  eval.test_accuracy = accuracy;
  store.add_eval(id, eval);
  RunSummary summary;
  summary.final_test_accuracy = summary.best_test_accuracy = accuracy;
  store.finish_run(id, "completed", "", summary);
}

// The data row of dense.tsv: epoch, wall s, payload MB, accuracy mean, min, max, bus MB.
std::vector<double> data_row(const std::string& dir) {
  std::ifstream in(dir + "/data/dense.tsv");
  std::string line;
  std::getline(in, line);  // header
  std::getline(in, line);
  std::istringstream fields(line);
  std::vector<double> row;
  for (double v; fields >> v;) row.push_back(v);
  return row;
}

std::vector<double> plot(const std::string& tag, double load1, double load2) {
  testdata::TempDir tmp("plots_" + tag);
  const std::string db = tmp.str() + "/r.db";
  {
    ResultStore store(db);
    write_seed(store, 1, 100, 0.90, load1);
    write_seed(store, 2, 300, 0.80, load2);
  }
  write_plots(db, "s", tmp.str() + "/plots", /*render=*/false);
  return data_row(tmp.str() + "/plots");
}

TEST(Plots, WallClockComesFromTheSeedsTimedOnAQuietHost) {
  // Seed 1 quiet, seed 2 timed beside other work: seconds from seed 1, accuracy from both.
  const auto quiet_one = plot("a", 0.01, 0.40);
  ASSERT_EQ(quiet_one.size(), 7u);
  EXPECT_DOUBLE_EQ(quiet_one[1], 100);
  EXPECT_DOUBLE_EQ(quiet_one[2], 2);
  EXPECT_DOUBLE_EQ(quiet_one[3], 85);
  EXPECT_DOUBLE_EQ(quiet_one[4], 80);
  EXPECT_DOUBLE_EQ(quiet_one[5], 90);
  // No quiet seed, or no load recorded: every seed.
  EXPECT_DOUBLE_EQ(plot("b", 0.30, 0.40)[1], 200);
  EXPECT_DOUBLE_EQ(plot("c", -1, -1)[1], 200);
}

}  // namespace
}  // namespace cedar
