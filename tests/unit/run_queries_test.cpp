// results/run_queries.h and results/results_reader.h: each query returns the runs written through
// the store, NULL columns as empty optionals, in id order; the shown runs are the latest finished
// run of each suite, name, seed and world size.
#include "results/run_queries.h"

#include <gtest/gtest.h>

#include <fstream>

#include "results/store.h"
#include "tests/unit/read_api_fixture.h"

namespace cedar {
namespace {

using read_api_test::exec_sql;
using read_api_test::fresh_db;
using read_api_test::record;
using read_api_test::step_row;

std::vector<int64_t> ids_of(const std::vector<RunRow>& runs) {
  std::vector<int64_t> ids;
  for (const auto& r : runs) ids.push_back(r.id);
  return ids;
}

TEST(RunQueries, ShownRunsAreTheLatestFinishedOfEachSuiteNameSeedAndWorldSize) {
  const std::string path = fresh_db("run_queries_shown.db");
  int64_t first, latest, running, failed, wider, other_suite;
  {
    ResultStore store(path);
    RunRecord a = record("s", "a", 1);
    first = store.begin_run(a);
    store.finish_run(first, "completed", "", {0.5, 0.6, 10, 100, 200});
    a.uuid = "11111111-2222-4333-8444-555555555555";
    a.attempt = 1;
    latest = store.begin_run(a);
    store.finish_run(latest, "completed", "", {0.75, 0.875, 12.5, 1000, 2000});
    a.uuid.clear();
    running = store.begin_run(a);  // not finished: hides nothing, shown nowhere
    failed = store.begin_run(record("s", "b", 1));
    ResultStore::mark_failed(path, failed, "killed");
    wider = store.begin_run(record("s", "a", 1, 4));
    store.finish_run(wider, "completed", "", {0.25, 0.25, 1, 2, 3});
    other_suite = store.begin_run(record("t", "c", 1));
    store.finish_run(other_suite, "diverged", "loss is nan", {});
  }
  // As a row from before schema version 5 (and before provenance) holds them.
  exec_sql(path,
           "UPDATE runs SET workers = NULL, servers = NULL, provenance = NULL, "
           "results_mode = NULL, filesystem = NULL, effective_momentum = NULL WHERE id = " +
               std::to_string(wider));

  ResultsReader db(path);
  EXPECT_EQ(ids_of(read_shown_runs(db, "s")), (std::vector<int64_t>{latest, failed, wider}));
  EXPECT_EQ(ids_of(read_shown_runs(db, "t")), (std::vector<int64_t>{other_suite}));
  EXPECT_EQ(ids_of(read_shown_runs(db, "")),
            (std::vector<int64_t>{latest, failed, wider, other_suite}));
  EXPECT_TRUE(read_shown_runs(db, "none").empty());
  (void)first;
  (void)running;

  const auto shown = read_shown_runs(db, "s");
  const RunRow& r = shown[0];
  EXPECT_EQ(r.suite, "s");
  EXPECT_EQ(r.name, "a");
  EXPECT_EQ(r.algorithm, "dense");
  EXPECT_EQ(r.model, "resnet20");
  EXPECT_EQ(r.dataset, "cifar10");
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.seed, 1);
  EXPECT_EQ(r.config, "name: a\nseed: 1");
  EXPECT_EQ(r.config_hash, record("s", "a", 1).config_hash);
  EXPECT_EQ(r.code_version, "v1.2-3-gabc");
  EXPECT_EQ(r.host, "node7");
  EXPECT_EQ(r.backend, "mpi");
  EXPECT_EQ(r.network, "10gbe");
  EXPECT_EQ(r.threads, 3);
  EXPECT_EQ(r.parameters, 272474);
  EXPECT_FALSE(r.start_time.empty());
  ASSERT_TRUE(r.end_time.has_value());
  EXPECT_GE(*r.end_time, r.start_time);
  EXPECT_EQ(r.status, "completed");
  EXPECT_EQ(r.error, std::optional<std::string>(""));
  EXPECT_EQ(r.final_test_accuracy, std::optional<double>(0.75));
  EXPECT_EQ(r.best_test_accuracy, std::optional<double>(0.875));
  EXPECT_EQ(r.wall_seconds, std::optional<double>(12.5));
  EXPECT_EQ(r.total_payload_bytes, std::optional<int64_t>(1000));
  EXPECT_EQ(r.total_bus_bytes, std::optional<int64_t>(2000));
  EXPECT_TRUE(r.pid.has_value());
  EXPECT_TRUE(r.heartbeat.has_value());
  EXPECT_EQ(r.effective_momentum, std::optional<double>(0.9));
  EXPECT_EQ(r.provenance, std::optional<std::string>(R"({"command":"cedar run x.yaml"})"));
  EXPECT_EQ(r.uuid, std::optional<std::string>("11111111-2222-4333-8444-555555555555"));
  EXPECT_EQ(r.attempt, 1);
  EXPECT_EQ(r.results_mode, std::optional<std::string>("wal"));
  EXPECT_EQ(r.filesystem, std::optional<std::string>("ext4"));
  EXPECT_EQ(r.workers, std::optional<int64_t>(2)) << "the store writes world_size for 0";
  EXPECT_EQ(r.servers, std::optional<int64_t>(0));

  // Marked failed by a process going down: no summary.
  const RunRow& f = shown[1];
  EXPECT_EQ(f.status, "failed");
  EXPECT_EQ(f.error, std::optional<std::string>("killed"));
  EXPECT_TRUE(f.end_time.has_value());
  EXPECT_FALSE(f.final_test_accuracy.has_value());
  EXPECT_FALSE(f.best_test_accuracy.has_value());
  EXPECT_FALSE(f.wall_seconds.has_value());
  EXPECT_FALSE(f.total_payload_bytes.has_value());
  EXPECT_FALSE(f.total_bus_bytes.has_value());

  const RunRow& old = shown[2];
  EXPECT_EQ(old.world_size, 4);
  EXPECT_FALSE(old.workers.has_value());
  EXPECT_FALSE(old.servers.has_value());
  EXPECT_FALSE(old.provenance.has_value());
  EXPECT_FALSE(old.results_mode.has_value());
  EXPECT_FALSE(old.filesystem.has_value());
  EXPECT_FALSE(old.effective_momentum.has_value());
}

// Steps 0-2 of a dense run (bus 30, 30, 40; latency 2, 2, 3) and a parameter server whose ssp
// rows are each one of its 2 workers' steps (gradients 1: share 1/2) but for a round of both (2).
struct TotalsDatabase {
  std::string path = fresh_db("run_queries_totals.db");
  int64_t dense = 0, ps = 0, running = 0;
  TotalsDatabase() {
    ResultStore store(path);
    dense = store.begin_run(record("p", "dense", 1));
    for (int64_t i = 0; i < 3; ++i) {
      StepRow s = step_row(i, i / 2, 1.0 + double(i));
      if (i == 2) {
        s.compute_seconds = 0.5;
        s.payload_bytes_all = 120;
        s.bus_bytes = 40;
        s.latency_steps = 3;
      }
      store.add_step(dense, s);
    }
    EvalRow e;
    e.step = 2;
    e.wall_seconds = 2.5;
    e.test_accuracy = 0.4;
    store.add_eval(dense, e);
    e.step = 3;
    e.wall_seconds = 4.0;
    e.test_accuracy = 0.6;
    store.add_eval(dense, e);
    store.finish_run(dense, "completed", "", {0.6, 0.6, 4.0, 0, 0});

    RunRecord p = record("p", "ps", 1, 3);
    p.workers = 2;
    p.servers = 1;
    ps = store.begin_run(p);
    for (int64_t i = 0; i < 4; ++i) {
      StepRow s = step_row(i, i / 2, 1.0 + double(i));
      s.compute_seconds = 0.5;
      s.bus_bytes = 10;
      s.payload_bytes_all = 7;
      s.stats = {{"gradients", i < 3 ? 1.0 : 2.0}};
      store.add_step(ps, s);
    }
    // Server rank 0's replies (send, sendrecv) count; its receives and a worker's sends do not.
    store.add_comm_totals(ps, {{0, "send", 4, 0, 70, 70, 0},
                               {0, "recv", 4, 0, 5, 5, 0},
                               {0, "sendrecv", 1, 0, 30, 30, 0},
                               {1, "send", 4, 0, 1000, 1000, 0}});
    store.finish_run(ps, "completed", "", {0.5, 0.5, 6.0, 0, 0});
    running = store.begin_run(record("p", "later", 1));
    store.add_step(running, step_row(0, 0, 1.0));
    store.flush();
  }
};

TEST(RunQueries, RunTotalsSumEachRunsStepsWeightedByTheirShareOfARanksStep) {
  TotalsDatabase t;
  ResultsReader db(t.path);
  const auto totals = read_run_totals(db, "p", 0.5);
  ASSERT_EQ(totals.size(), 2u) << "the running run is not shown";
  const RunTotals& d = totals[0];
  EXPECT_EQ(d.run.id, t.dense);
  EXPECT_EQ(d.steps, 3);
  EXPECT_EQ(d.payload_bytes_all, 100 + 100 + 120);
  EXPECT_EQ(d.bus_bytes, 30 + 30 + 40);
  EXPECT_EQ(d.dense_bytes, 150);
  EXPECT_DOUBLE_EQ(d.compute_seconds, 1.0);
  EXPECT_EQ(d.latency_steps, 7);
  EXPECT_EQ(d.seconds_to_target, std::optional<double>(4.0));

  const RunTotals& p = totals[1];
  EXPECT_EQ(p.run.id, t.ps);
  EXPECT_EQ(p.steps, 4);
  EXPECT_EQ(p.payload_bytes_all, 28) << "not weighted";
  EXPECT_EQ(p.bus_bytes, 25) << "10 x (1/2 + 1/2 + 1/2 + 2/2)";
  EXPECT_DOUBLE_EQ(p.compute_seconds, 1.25);
  EXPECT_EQ(p.latency_steps, 5);
  EXPECT_FALSE(p.seconds_to_target.has_value()) << "no evaluations";

  EXPECT_EQ(read_run_totals(db, "p", 0.3)[0].seconds_to_target, std::optional<double>(2.5));
  EXPECT_FALSE(read_run_totals(db, "p", 0.9)[0].seconds_to_target.has_value());
  EXPECT_FALSE(read_run_totals(db, "p", 0)[0].seconds_to_target.has_value()) << "no target";
}

TEST(RunQueries, RunStepSumsAreUnweightedAndReadOneRunWhateverItsStatus) {
  TotalsDatabase t;
  ResultsReader db(t.path);
  const auto sums = read_run_step_sums(db, "p", 0);
  ASSERT_EQ(sums.size(), 2u);
  EXPECT_EQ(sums[0].run.id, t.dense);
  EXPECT_EQ(sums[0].epochs, 2);
  EXPECT_DOUBLE_EQ(sums[0].gradients, 0);
  EXPECT_EQ(sums[0].server_send_payload_bytes, 0) << "no servers";
  const RunStepSums& p = sums[1];
  EXPECT_EQ(p.run.id, t.ps);
  EXPECT_EQ(p.steps, 4);
  EXPECT_EQ(p.epochs, 2);
  EXPECT_DOUBLE_EQ(p.compute_seconds, 2.0);
  EXPECT_EQ(p.latency_steps, 8);
  EXPECT_EQ(p.bus_bytes, 40);
  EXPECT_EQ(p.dense_bytes, 200);
  EXPECT_EQ(p.payload_bytes_all, 28);
  EXPECT_DOUBLE_EQ(p.gradients, 5);
  EXPECT_EQ(p.server_send_payload_bytes, 100);
  EXPECT_EQ(p.run.servers, std::optional<int64_t>(1));

  const auto one = read_run_step_sums(db, "", t.running);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].run.status, "running");
  EXPECT_FALSE(one[0].run.end_time.has_value());
  EXPECT_FALSE(one[0].run.final_test_accuracy.has_value());
  EXPECT_FALSE(one[0].run.error.has_value());
  EXPECT_EQ(one[0].steps, 1);
}

TEST(RunQueries, TimeSpanCoversTheShownRuns) {
  TotalsDatabase t;
  ResultsReader db(t.path);
  const auto shown = read_shown_runs(db, "p");
  ASSERT_EQ(shown.size(), 2u);
  const RunTimeSpan span = read_run_time_span(db, "p");
  EXPECT_EQ(span.runs, 2);
  EXPECT_EQ(span.first_start, std::min(shown[0].start_time, shown[1].start_time));
  EXPECT_EQ(span.last_end, std::max(*shown[0].end_time, *shown[1].end_time));
  EXPECT_EQ(span.run_seconds, std::optional<double>(10.0));

  const RunTimeSpan none = read_run_time_span(db, "none");
  EXPECT_EQ(none.runs, 0);
  EXPECT_FALSE(none.first_start.has_value());
  EXPECT_FALSE(none.last_end.has_value());
  EXPECT_FALSE(none.run_seconds.has_value());
}

TEST(ResultsReader, NamesTheFileThatIsNoResultsDatabase) {
  const std::string missing = ::testing::TempDir() + "run_queries_missing/none.db";
  try {
    ResultsReader db(missing);
    FAIL() << "opened a file that does not exist";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  const std::string other = fresh_db("run_queries_other.db");
  exec_sql(other, "CREATE TABLE notes (text TEXT)");
  try {
    ResultsReader db(other);
    FAIL() << "read a database without runs";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()), other + ": not a Cedar results database (no runs table)");
  }
  const std::string text = fresh_db("run_queries_text.db");
  std::ofstream(text) << "name,seed\nqsgd,1\n";
  try {
    ResultsReader db(text);
    FAIL() << "read a text file";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cedar
