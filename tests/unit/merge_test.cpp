// Shards and `cedar merge`: a run's rows written to its own shard reach the main database once,
// attempts of a resumed run merge as one run, open shards wait, other schema versions are refused.
#include "results/merge.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "results/shards.h"
#include "results/store.h"
#include "results/uuid.h"
#include "tests/unit/sqlite_query.h"

namespace cedar {
namespace {

using testing_sql::query;
using testing_sql::query_text;

std::string fresh_db(const std::string& name) {
  auto dir = std::filesystem::path(::testing::TempDir()) / ("merge_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / "results.db").string();
}

RunRecord record(const std::string& name, const std::string& uuid, int64_t attempt) {
  RunRecord r;
  r.name = name;
  r.algorithm = "dense";
  r.model = "lenet5";
  r.dataset = "synthetic";
  r.config = "name: " + name;
  r.config_hash = stable_hash(r.config);
  r.code_version = "test";
  r.host = this_host();
  r.backend = "local";
  r.uuid = uuid;
  r.attempt = attempt;
  r.results_mode = "shards";
  return r;
}

StepRow step_row(int64_t step) {
  StepRow s;
  s.step = step;
  s.payload_bytes = 100 + step;
  s.train_loss = 1.0 / double(step + 1);
  s.stats = {{"uploads", double(step % 3)}};
  return s;
}

// Attempt `attempt` of run `uuid` writes steps [first, last) into its shard, an evaluation after
// each step in `evals`, and ends with `status` ("running": the writer vanished without a word).
void write_attempt(const std::string& db, const std::string& name, const std::string& uuid,
                   int64_t attempt, int64_t resumed_from, int64_t first, int64_t last,
                   std::vector<int64_t> evals, const std::string& status) {
  ShardWriter w = open_shard(db, uuid, attempt, resumed_from);
  const int64_t id = w.store->begin_run(record(name, uuid, attempt));
  for (int64_t s = first; s < last; ++s) {
    w.store->add_step(id, step_row(s));
    for (int64_t e : evals)
      if (e == s) w.store->add_eval(id, EvalRow{s, 0, 0, 0, 0, 0.5, 0.1 * double(s), 0, 0});
  }
  if (status != "running") {
    w.store->add_comm_totals(id, {CommTotalRow{0, "allreduce", last - first, 10, 400, 400, 0}});
    w.store->finish_run(id, status, "", RunSummary{});
  } else {
    w.store->flush();
  }
}

MergeResult merge(const std::string& db) { return merge_shards(db, MergeOptions{}); }

TEST(Merge, FoldsClosedShardsOnceAndRemovesThem) {
  const std::string db = fresh_db("once");
  write_attempt(db, "a", new_uuid(), 0, -1, 0, 10, {9}, "completed");
  write_attempt(db, "b", new_uuid(), 0, -1, 0, 7, {6}, "completed");
  const MergeResult first = merge(db);
  EXPECT_EQ(first.merged, 2);
  EXPECT_EQ(first.new_runs, 2);
  EXPECT_EQ(first.step_rows, 17);
  EXPECT_TRUE(list_shards(db).empty());
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM runs WHERE status='completed'"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM steps"), 17);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM step_stats"), 17);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM evals"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM comm_totals"), 2);
  EXPECT_EQ(query(db, "SELECT SUM(payload_bytes) FROM steps"), 17 * 100 + 45 + 21);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM merged_shards"), 2);
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
  const MergeResult again = merge(db);
  EXPECT_EQ(again.merged, 0);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM runs"), 2);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM steps"), 17);
}

TEST(Merge, AShardStillBeingWrittenWaits) {
  const std::string db = fresh_db("open");
  const std::string uuid = new_uuid();
  {
    ShardWriter w = open_shard(db, uuid, 0, -1);
    const int64_t id = w.store->begin_run(record("live", uuid, 0));
    w.store->add_step(id, step_row(0));
    w.store->flush();
    const MergeResult during = merge(db);  // its writer (this process) holds the shard's lock
    EXPECT_EQ(during.merged, 0);
    EXPECT_EQ(during.open, 1);
    EXPECT_EQ(query(db, "SELECT COUNT(*) FROM runs"), 0);
    EXPECT_FALSE(completed_in_results(db, stable_hash("name: live")));
    w.store->finish_run(id, "completed", "", RunSummary{});
  }
  EXPECT_TRUE(completed_in_results(db, stable_hash("name: live")));  // closed shard, unmerged
  EXPECT_EQ(merge(db).merged, 1);
  EXPECT_TRUE(completed_in_results(db, stable_hash("name: live")));  // now in main
}

// Another suite sharing the database has just created its file and not yet its tables (SQLite
// creates the file on open, the schema in a later transaction): no run is recorded there yet,
// which is not an error.
TEST(Merge, ADatabaseWhoseTablesAreNotCreatedYetHoldsNoRuns) {
  const std::string db = fresh_db("being_created");
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(handle, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(handle);
  ASSERT_TRUE(std::filesystem::exists(db));
  EXPECT_FALSE(completed_in_results(db, stable_hash("name: any")));
  EXPECT_TRUE(recorded_runs(db, stable_hash("name: any")).empty());
  EXPECT_FALSE(find_resumable_run(db, stable_hash("name: any")).has_value());
}

// Attempt 0 writes steps 0-9 (evaluations after 5 and 9) and vanishes; attempt 1 resumes from the
// checkpoint after step 6 and writes steps 6-19 (evaluation after 19). One run results: steps
// 0-19 once each, evaluations after 5 and 19, attempt 1's status and totals.
void expect_one_resumed_run(const std::string& db) {
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "completed");
  EXPECT_EQ(query(db, "SELECT attempt FROM runs"), 1);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM steps"), 20);
  EXPECT_EQ(query(db, "SELECT COUNT(DISTINCT step) FROM steps"), 20);
  EXPECT_EQ(query(db, "SELECT MAX(step) FROM steps"), 19);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM step_stats"), 20);
  EXPECT_EQ(query_text(db, "SELECT group_concat(step) FROM (SELECT step FROM evals ORDER BY step)"),
            "5,19");
  EXPECT_EQ(query(db, "SELECT calls FROM comm_totals"), 14);
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
}

TEST(Merge, AttemptsOfAResumedRunMergeAsOneRun) {
  const std::string db = fresh_db("attempts");
  const std::string uuid = new_uuid();
  write_attempt(db, "r", uuid, 0, -1, 0, 10, {5, 9}, "running");
  const auto resumable = find_resumable_run(db, stable_hash("name: r"));
  ASSERT_TRUE(resumable);  // its shard is closed with the run 'running': its writer is gone
  EXPECT_EQ(resumable->uuid, uuid);
  EXPECT_EQ(next_attempt(db, uuid), 1);
  write_attempt(db, "r", uuid, 1, 6, 6, 20, {19}, "completed");
  EXPECT_EQ(merge(db).merged, 2);
  expect_one_resumed_run(db);
}

TEST(Merge, AnAttemptMergedEarlierIsReplacedFromItsResumeStep) {
  const std::string db = fresh_db("attempts_apart");
  const std::string uuid = new_uuid();
  write_attempt(db, "r", uuid, 0, -1, 0, 10, {5, 9}, "running");
  EXPECT_EQ(merge(db).merged, 1);
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "failed");
  EXPECT_NE(query_text(db, "SELECT error FROM runs").find("stale"), std::string::npos);
  const auto resumable = find_resumable_run(db, stable_hash("name: r"));  // from main now
  ASSERT_TRUE(resumable);
  EXPECT_EQ(resumable->uuid, uuid);
  EXPECT_EQ(next_attempt(db, uuid), 1);
  write_attempt(db, "r", uuid, 1, 6, 6, 20, {19}, "completed");
  EXPECT_EQ(merge(db).merged, 1);
  expect_one_resumed_run(db);
}

TEST(Merge, AShardOfAnotherSchemaVersionIsRefused) {
  const std::string db = fresh_db("version");
  const std::string uuid = new_uuid();
  write_attempt(db, "v", uuid, 0, -1, 0, 3, {}, "completed");
  const std::string shard = shard_path(db, uuid, 0);
  query(shard, "PRAGMA user_version = 1");
  const MergeResult r = merge(db);
  EXPECT_EQ(r.merged, 0);
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_NE(r.refused[0].find(shard + ": schema version 1, written by cedar test"),
            std::string::npos)
      << r.refused[0];
  EXPECT_TRUE(std::filesystem::exists(shard));
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM runs"), 0);
}

TEST(Merge, AnOlderMainDatabaseIsMigratedFirst) {
  const std::string db = fresh_db("migrate");
  // The runs table as the first released schema had it: no pid, heartbeat, uuid, attempt, ...
  query(db,
        "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, suite TEXT NOT NULL DEFAULT '', "
        "name TEXT NOT NULL, algorithm TEXT NOT NULL, model TEXT NOT NULL, dataset TEXT NOT NULL, "
        "world_size INTEGER NOT NULL, seed INTEGER NOT NULL, config TEXT NOT NULL, config_hash "
        "TEXT NOT NULL, code_version TEXT NOT NULL, host TEXT NOT NULL, backend TEXT NOT NULL, "
        "network TEXT NOT NULL DEFAULT '', threads INTEGER NOT NULL, parameters INTEGER NOT NULL "
        "DEFAULT 0, start_time TEXT NOT NULL, end_time TEXT, status TEXT NOT NULL, error TEXT, "
        "final_test_accuracy REAL, best_test_accuracy REAL, wall_seconds REAL, "
        "total_payload_bytes INTEGER, total_bus_bytes INTEGER)");
  query(db,
        "INSERT INTO runs (name, algorithm, model, dataset, world_size, seed, config, config_hash, "
        "code_version, host, backend, threads, start_time, status) VALUES ('old', 'dense', "
        "'lenet5', 'synthetic', 2, 1, 'c', 'h', 'v0', 'x', 'mpi', 1, 't', 'completed')");
  EXPECT_EQ(query(db, "PRAGMA user_version"), 0);
  write_attempt(db, "new", new_uuid(), 0, -1, 0, 4, {}, "completed");
  EXPECT_EQ(merge(db).merged, 1);
  EXPECT_EQ(query(db, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM runs"), 2);
  EXPECT_EQ(query(db, "SELECT length(uuid) FROM runs WHERE name='old'"), 36);
  EXPECT_EQ(query(db, "SELECT COUNT(*) FROM steps"), 4);
}

TEST(Merge, AMainDatabaseOfANewerSchemaIsAnError) {
  const std::string db = fresh_db("newer");
  query(db, "PRAGMA user_version = 99");
  write_attempt(db, "x", new_uuid(), 0, -1, 0, 2, {}, "completed");
  try {
    merge(db);
    FAIL() << "expected an error";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(db + " has schema version 99"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(list_shards(db).size(), 1u);
}

}  // namespace
}  // namespace cedar
