// The comparison table's parameter-server rows: Δ vs dense against dense SGD on as many ranks as
// the server has workers (as the claims count them), and no per-rank bytes or modeled seconds
// that would mean something else on a row whose ranks are servers and workers.
#include "reports/comparison.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "results/store.h"

namespace cedar {
namespace {

int64_t write_run(ResultStore& store, const std::string& name, const std::string& algorithm,
                  int64_t world, int64_t servers, double accuracy) {
  RunRecord rec;
  rec.suite = "ps";
  rec.name = name;
  rec.algorithm = algorithm;
  rec.model = "lenet5";
  rec.dataset = "fashion-mnist";
  rec.world_size = world;
  rec.workers = world - servers;
  rec.servers = servers;
  rec.config = "name: " + name;
  rec.config_hash = name;
  rec.code_version = rec.host = rec.backend = "test";
  rec.network = "1gbe";
  const int64_t id = store.begin_run(rec);
  StepRow row;
  row.compute_seconds = 0.01;
  row.payload_bytes = row.bus_bytes = row.payload_bytes_all = 1000;
  row.dense_bytes = 1000;
  store.add_step(id, row);
  RunSummary summary;
  summary.final_test_accuracy = summary.best_test_accuracy = accuracy;
  store.finish_run(id, "completed", "", summary);
  return id;
}

TEST(ComparisonTable, ParameterServerIsComparedWithDenseOnItsWorkers) {
  const std::string path = ::testing::TempDir() + "comparison_ps_test.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  {
    ResultStore store(path);
    write_run(store, "dense/np3", "dense", 3, 0, 0.80);
    write_run(store, "dense/np4", "dense", 4, 0, 0.90);
    write_run(store, "ps-bsp", "ps", 4, 1, 0.85);  // 3 workers + 1 server
  }
  const auto rows = compare_runs(load_runs(path, "ps"));
  ASSERT_EQ(rows.size(), 3u);
  const ComparisonRow& ps = rows[2];
  ASSERT_EQ(ps.name, "ps-bsp");
  EXPECT_EQ(ps.workers, 3);
  ASSERT_TRUE(ps.has_dense);
  EXPECT_NEAR(ps.gap_to_dense, 0.85 - 0.80, 1e-12);  // against dense/np3, not dense/np4
  const std::string md = render_markdown(rows);
  EXPECT_NE(md.find("| ps-bsp | ps | lenet5 | fashion-mnist | 4 (3 + 1 srv) | 85.00 | 85.00 | "
                    "+5.00 | 0.0 | – | – | – | – | – | – / – / – |"),
            std::string::npos)
      << md;
}

// The time columns (wall s, img/s/rank, modeled seconds, time to target) come from the seeds
// timed on a quiet host where a row has any; accuracy and bytes from every seed. Seed 1 quiet
// (100 s, 50 img/s, 10 s of compute), seed 2 timed beside other work (300 s, 20 img/s, 30 s).
TEST(ComparisonTable, TimeColumnsComeFromTheSeedsTimedOnAQuietHost) {
  auto seed = [](int64_t s, double accuracy, double wall, double rate, double compute,
                 double load) {
    RunResult r;
    r.name = r.algorithm = "dense";
    r.model = "resnet20";
    r.dataset = "fashion-mnist";
    r.status = "completed";
    r.world_size = r.workers = 4;
    r.seed = s;
    r.final_accuracy = r.best_accuracy = accuracy;
    r.wall_seconds = wall;
    r.images_per_second = rate;
    r.compute_seconds = compute;
    r.payload_bytes_per_rank = r.dense_bytes_per_rank = 1000 * s;
    r.other_load = load;
    return r;
  };
  const auto rows =
      compare_runs({seed(1, 0.90, 100, 50, 10, 0.01), seed(2, 0.80, 300, 20, 30, 0.4)});
  ASSERT_EQ(rows.size(), 1u);
  const ComparisonRow& r = rows[0];
  EXPECT_NEAR(r.final_mean, 0.85, 1e-12);     // every seed
  EXPECT_NEAR(r.payload_mb, 1500e-6, 1e-12);  // every seed
  EXPECT_NEAR(r.wall_mean, 100, 1e-12);
  EXPECT_NEAR(r.images_per_second, 50, 1e-12);
  ASSERT_FALSE(r.modeled_seconds.empty());
  EXPECT_NEAR(r.modeled_seconds[0], 10, 1e-12);  // no collectives: compute alone
  EXPECT_EQ(r.timed_runs, 1);
  EXPECT_FALSE(r.timed_beside_other_work);
  EXPECT_NE(render_markdown(rows).find("Time columns (wall s, img/s/rank, modeled s) are means "
                                       "over the seeds timed on a quiet host (other processes "
                                       "used at most 5% of its CPU): dense (1 of 2)."),
            std::string::npos)
      << render_markdown(rows);
  // No quiet seed: all of them, and the row is named as timed beside other work.
  const auto loaded =
      compare_runs({seed(1, 0.9, 100, 50, 10, 0.3), seed(2, 0.8, 300, 20, 30, 0.4)});
  EXPECT_NEAR(loaded[0].wall_mean, 200, 1e-12);
  EXPECT_TRUE(loaded[0].timed_beside_other_work);
  EXPECT_NE(render_markdown(loaded).find(
                "no seed was quiet, so all of them, timed beside other work: dense (2 of 2)."),
            std::string::npos)
      << render_markdown(loaded);
  // Every seed quiet: said in four words.
  const auto quiet =
      compare_runs({seed(1, 0.9, 100, 50, 10, 0.0), seed(2, 0.8, 300, 20, 30, 0.05)});
  EXPECT_NEAR(quiet[0].wall_mean, 200, 1e-12);
  EXPECT_NE(render_markdown(quiet).find("of its CPU): every seed was."), std::string::npos)
      << render_markdown(quiet);
  // No load recorded: all seeds, nothing said.
  const auto unknown = compare_runs({seed(1, 0.9, 100, 50, 10, -1), seed(2, 0.8, 300, 20, 30, -1)});
  EXPECT_NEAR(unknown[0].wall_mean, 200, 1e-12);
  EXPECT_EQ(render_markdown(unknown).find("Time columns"), std::string::npos);
}

}  // namespace
}  // namespace cedar
