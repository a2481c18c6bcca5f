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

}  // namespace
}  // namespace cedar
