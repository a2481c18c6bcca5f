// The share of the exchange train.overlap hid behind backward, as `cedar report --overlap` and the
// document read it from step_stats: per seed the median of its steps' shares after step 0, per run
// name the mean of the seeds' medians and their range; the latest finished run of a name and seed
// only; runs without the stats left out. Expected values are worked out by hand below.
#include "reports/hidden_exchange.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "results/store.h"

namespace cedar {
namespace {

using Steps = std::vector<std::pair<double, double>>;  // per step from 0: (exchange s, hidden s)

void write_run(ResultStore& store, const std::string& name, int64_t world, int64_t seed,
               const Steps& steps, bool finish = true) {
  RunRecord rec;
  rec.suite = "s";
  rec.name = name;
  rec.algorithm = "dense";
  rec.model = "lenet5";
  rec.dataset = "fashion-mnist";
  rec.world_size = world;
  rec.seed = seed;
  rec.config = "name: " + name;
  rec.config_hash = name + std::to_string(seed) + std::to_string(steps.size());
  rec.code_version = rec.host = rec.backend = rec.network = "test";
  const int64_t id = store.begin_run(rec);
  for (size_t i = 0; i < steps.size(); ++i) {
    StepRow row;
    row.step = static_cast<int64_t>(i);
    row.train_loss = 1.0;
    if (steps[i].first >= 0)
      row.stats = {{"overlap_exchange_seconds", steps[i].first},
                   {"overlap_hidden_seconds", steps[i].second}};
    store.add_step(id, row);
  }
  if (finish) store.finish_run(id, "completed", "", RunSummary{});
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class HiddenExchange : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "hidden_exchange_test.db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
    ResultStore store(path_);
    // An earlier run of ov seed 1, replaced by the later one: all hidden.
    write_run(store, "ov", 2, 1, {{1, 1}, {1, 1}, {1, 1}});
    write_run(store, "fifo", 4, 1, {{5, 0}, {0.010, 0.002}});
    // ov seed 1: step 0 left out; shares 0.5, 0.25, 0.75 -> median 0.5; exchange 10, 20, 40 ms ->
    // 20; hidden 5, 5, 30 ms -> 5.
    write_run(store, "ov", 2, 1, {{9, 9}, {0.010, 0.005}, {0.020, 0.005}, {0.040, 0.030}});
    // ov seed 2: shares 0 and 0.1 (the step without exchange has no share) -> 0.05; exchange 10,
    // 10, 0 ms -> 10; hidden 0, 1, 0 ms -> 0.
    write_run(store, "ov", 2, 2, {{9, 0}, {0.010, 0}, {0.010, 0.001}, {0, 0}});
    write_run(store, "plain", 2, 1, {{-1, 0}, {-1, 0}});               // no overlap stats
    write_run(store, "ov", 2, 3, {{1, 1}, {1, 1}}, /*finish=*/false);  // still running
  }
  std::string path_;
};

TEST_F(HiddenExchange, SeedMediansAfterStepZeroAveragedPerRunName) {
  const auto rows = load_hidden_exchange(path_, "s");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "fifo");  // its first shown run comes before ov's
  EXPECT_EQ(rows[0].world_size, 4);
  EXPECT_DOUBLE_EQ(rows[0].mean_share, 0.2);
  const HiddenExchangeRow& ov = rows[1];
  EXPECT_EQ(ov.name, "ov");
  EXPECT_EQ(ov.seeds, (std::vector<int64_t>{1, 2}));
  ASSERT_EQ(ov.seed_shares.size(), 2u);
  EXPECT_DOUBLE_EQ(ov.seed_shares[0], 0.5);
  EXPECT_NEAR(ov.seed_shares[1], 0.05, 1e-12);
  EXPECT_NEAR(ov.mean_share, 0.275, 1e-12);
  EXPECT_NEAR(ov.min_share, 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(ov.max_share, 0.5);
  EXPECT_NEAR(ov.exchange_ms, 15, 1e-9);  // median of 20 and 10
  EXPECT_NEAR(ov.hidden_ms, 2.5, 1e-9);   // median of 5 and 0
  EXPECT_EQ(ov.steps, 6);
  EXPECT_TRUE(load_hidden_exchange(path_, "other").empty());
}

TEST_F(HiddenExchange, TableAndFigureData) {
  const auto rows = load_hidden_exchange(path_, "s");
  const std::string md = render_hidden_exchange_markdown(rows);
  EXPECT_NE(md.find("| ov | 2 | 2 | 6 | 0.275 | 0.050-0.500 | 15.0 | 2.5 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| fifo | 4 | 1 | 1 | 0.200 | 0.200-0.200 | 10.0 | 2.0 |"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("plain"), std::string::npos);
  EXPECT_EQ(render_hidden_exchange_markdown({}), "");

  const std::string dir = ::testing::TempDir() + "hidden_exchange_plot";
  EXPECT_EQ(write_hidden_exchange_plot(rows, dir, /*render=*/false), dir + "/hidden_exchange.svg");
  EXPECT_EQ(read(dir + "/data/hidden_exchange.tsv"),
            "# run\tmean_share\tmin_share\tmax_share\nfifo\t0.2\t0.2\t0.2\nov\t0.275\t0.05\t0.5\n");
  EXPECT_NE(read(dir + "/hidden_exchange.gp").find("'data/hidden_exchange.tsv' using 0:2:xtic(1)"),
            std::string::npos);
  EXPECT_THROW(write_hidden_exchange_plot({}, dir, false), std::runtime_error);
}

}  // namespace
}  // namespace cedar
