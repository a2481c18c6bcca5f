// Results store: schema, step buffering, status transitions, concurrent writers.
#include "results/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "results/database.h"
#include "tests/unit/sqlite_query.h"

namespace cedar {
namespace {

std::string fresh_db(const std::string& name) {
  auto p = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove(p);
  return p.string();
}

using testing_sql::query;
using testing_sql::query_text;

RunRecord record(const std::string& name) {
  RunRecord r;
  r.name = name;
  r.algorithm = "dense";
  r.model = "resnet20";
  r.dataset = "synthetic";
  r.config = "name: " + name;
  r.config_hash = stable_hash(r.config);
  r.code_version = "test";
  r.host = "h";
  r.backend = "local";
  return r;
}

TEST(Store, RunLifecycleAndRows) {
  auto path = fresh_db("life.db");
  {
    ResultStore s(path);
    int64_t id = s.begin_run(record("a"));
    EXPECT_EQ(query_text(path, "SELECT status FROM runs"), "running");
    for (int i = 0; i < 120; ++i) {
      StepRow r;
      r.step = i;
      r.payload_bytes = 100;
      r.cum_payload_bytes = 100 * (i + 1);
      if (i % 2 == 0) r.stats = {{"uploads", double(i % 3)}, {"density", 0.01}};
      s.add_step(id, r);
    }
    EvalRow e;
    e.step = 120;
    e.test_accuracy = 0.5;
    s.add_eval(id, e);  // commits pending steps too
    EXPECT_EQ(query(path, "SELECT COUNT(*) FROM steps"), 120);
    EXPECT_EQ(query(path, "SELECT MAX(cum_payload_bytes) FROM steps"), 12000);
    EXPECT_EQ(query(path, "SELECT COUNT(*) FROM step_stats WHERE key='uploads'"), 60);
    EXPECT_EQ(query(path, "SELECT SUM(value) FROM step_stats WHERE key='uploads'"), 60);
    RunSummary sum;
    sum.final_test_accuracy = 0.5;
    s.finish_run(id, "completed", "", sum);
  }
  EXPECT_EQ(query_text(path, "SELECT status FROM runs"), "completed");
  EXPECT_EQ(query(path, "SELECT final_test_accuracy FROM runs"), 0.5);
  EXPECT_EQ(query_text(path, "PRAGMA journal_mode"), "wal");
}

// Each evaluation records the consensus distance; a database of the previous schema version
// without the column gains it when opened, NULL in its earlier rows.
TEST(Store, AnOlderDatabaseGainsTheConsensusDistance) {
  auto path = fresh_db("v2.db");
  {
    ResultStore s(path);
    int64_t id = s.begin_run(record("a"));
    EvalRow e;
    e.step = 1;
    e.consensus_distance = 0.25;
    s.add_eval(id, e);
  }
  EXPECT_EQ(query(path, "SELECT consensus_distance FROM evals"), 0.25);
  query(path, "ALTER TABLE evals DROP COLUMN consensus_distance");
  query(path, "PRAGMA user_version = " + std::to_string(kSchemaVersion - 1));
  EXPECT_EQ(query(path,
                  "SELECT COUNT(*) FROM pragma_table_info('evals') "
                  "WHERE name='consensus_distance'"),
            0);
  {
    ResultStore s(path);
    EvalRow e;
    e.step = 2;
    e.consensus_distance = 1.5;
    s.add_eval(1, e);
  }
  EXPECT_EQ(query(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(query(path, "SELECT COUNT(*) FROM evals WHERE step=1 AND consensus_distance IS NULL"),
            1);
  EXPECT_EQ(query(path, "SELECT consensus_distance FROM evals WHERE step=2"), 1.5);
}

// A run records its workers and servers; a database of schema version 4, without those columns,
// gains them when opened (NULL in its earlier runs).
TEST(Store, AnOlderDatabaseGainsWorkersAndServers) {
  auto path = fresh_db("v4.db");
  {
    ResultStore s(path);
    RunRecord r = record("ps");
    r.world_size = 3;
    r.workers = 2;
    r.servers = 1;
    s.begin_run(r);
  }
  EXPECT_EQ(query(path, "SELECT workers FROM runs"), 2);
  EXPECT_EQ(query(path, "SELECT servers FROM runs"), 1);
  query(path, "ALTER TABLE runs DROP COLUMN workers");
  query(path, "ALTER TABLE runs DROP COLUMN servers");
  query(path, "PRAGMA user_version = 4");
  {
    ResultStore s(path);
    RunRecord r = record("dense");
    r.world_size = 2;
    s.begin_run(r);
  }
  EXPECT_EQ(query(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(query(path, "SELECT COUNT(*) FROM runs WHERE name='ps' AND workers IS NULL"), 1);
  // An all-reduce run: every rank a worker, no servers.
  EXPECT_EQ(query(path, "SELECT workers FROM runs WHERE name='dense'"), 2);
  EXPECT_EQ(query(path, "SELECT servers FROM runs WHERE name='dense'"), 0);
}

// Each step's levels record their measured seconds; a database of schema version 5, without
// the column, gains it when opened (NULL in its earlier rows).
TEST(Store, AnOlderDatabaseGainsTheSecondsOfEachLevel) {
  auto path = fresh_db("v5.db");
  auto step = [](int64_t n, double seconds) {
    StepRow r;
    r.step = n;
    r.levels = {{"intra", "shm", 2, 1, 100, 100, 1, 0.25, seconds}};
    return r;
  };
  {
    ResultStore s(path);
    s.add_step(s.begin_run(record("h")), step(0, 0.75));
  }
  EXPECT_EQ(query(path, "SELECT comm_seconds FROM step_levels"), 0.75);
  query(path, "ALTER TABLE step_levels DROP COLUMN comm_seconds");
  query(path, "PRAGMA user_version = 5");
  {
    ResultStore s(path);
    s.add_step(1, step(1, 1.5));
  }
  EXPECT_EQ(query(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(query(path, "SELECT COUNT(*) FROM step_levels WHERE step=0 AND comm_seconds IS NULL"),
            1);
  EXPECT_EQ(query(path, "SELECT comm_seconds FROM step_levels WHERE step=1"), 1.5);
}

// A row the database refuses (a NaN into a NOT NULL column) is an error that leaves no
// transaction open: the rows before it stay, and the run's record is then marked failed.
TEST(Store, RefusedRowLeavesTheRunMarkable) {
  auto path = fresh_db("refused.db");
  {
    ResultStore s(path);
    int64_t id = s.begin_run(record("a"));
    StepRow r;
    r.step = 0;
    s.add_step(id, r);
    EvalRow e;
    e.step = 1;
    e.test_loss = std::nan("");
    EXPECT_THROW(s.add_eval(id, e), StoreError);
    s.finish_run(id, "failed", "refused", RunSummary{});
  }
  EXPECT_EQ(query_text(path, "SELECT status || ':' || error FROM runs"), "failed:refused");
  EXPECT_EQ(query(path, "SELECT COUNT(*) FROM evals"), 0);
}

TEST(Store, MarkFailedOnlyTouchesRunningRuns) {
  auto path = fresh_db("fail.db");
  ResultStore s(path);
  int64_t done = s.begin_run(record("done"));
  s.finish_run(done, "completed", "", {});
  int64_t live = s.begin_run(record("live"));
  ResultStore::mark_failed(path, done, "x");
  ResultStore::mark_failed(path, live, "interrupted by SIGTERM");
  EXPECT_EQ(query_text(path, "SELECT status FROM runs WHERE name='done'"), "completed");
  EXPECT_EQ(query_text(path, "SELECT status || ':' || error FROM runs WHERE name='live'"),
            "failed:interrupted by SIGTERM");
}

TEST(Store, ConcurrentWritersLoseNothing) {
  auto path = fresh_db("concurrent.db");
  { ResultStore init(path); }
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w)
    writers.emplace_back([&, w] {
      ResultStore s(path);
      int64_t id = s.begin_run(record("w" + std::to_string(w)));
      for (int i = 0; i < 200; ++i) {
        StepRow r;
        r.step = i;
        s.add_step(id, r);
      }
      s.finish_run(id, "completed", "", {});
    });
  for (auto& t : writers) t.join();
  EXPECT_EQ(query(path, "SELECT COUNT(*) FROM steps"), 600);
  EXPECT_EQ(query(path, "SELECT COUNT(*) FROM runs WHERE status='completed'"), 3);
}

// Processes that open one new database at the same moment (two suites started together) all set
// it up; none gets "database is locked". Several rounds, as the race is timing-dependent.
TEST(Store, ProcessesOpeningOneNewDatabaseTogetherAllSucceed) {
  constexpr int kProcesses = 6, kRounds = 15;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = fresh_db("opened_together.db");
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    int go[2];
    ASSERT_EQ(pipe(go), 0);
    std::vector<pid_t> children;
    for (int c = 0; c < kProcesses; ++c) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(go[1]);
        char byte;
        if (read(go[0], &byte, 1) != 0) _exit(3);  // released together when the pipe closes
        try {
          ResultStore s(path);
          s.begin_run(record("p" + std::to_string(c)));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "process %d: %s\n", c, e.what());
          _exit(1);
        }
        _exit(0);
      }
      children.push_back(pid);
    }
    close(go[0]);
    close(go[1]);
    for (pid_t pid : children) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
    }
    EXPECT_EQ(query(path, "SELECT COUNT(*) FROM runs"), kProcesses) << "round " << round;
  }
}

TEST(Store, UnwritablePathIsAClearError) {
  try {
    ResultStore s("/proc/cedar/forbidden.db");
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/cedar/forbidden.db"), std::string::npos)
        << e.what();
  }
}

TEST(Store, StableHashIsFnv1a) {
  EXPECT_EQ(stable_hash(""), "cbf29ce484222325");
  EXPECT_EQ(stable_hash("a"), "af63dc4c8601ec8c");
}

}  // namespace
}  // namespace cedar
