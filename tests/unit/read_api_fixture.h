#pragma once
// Helpers of the tests of results/' typed read API: a fresh database path, a run record with every
// column set, a step row, and SQL run directly on the database (to write the NULLs of rows from
// older schemas, which the store no longer writes).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <string>

#include "results/store.h"

namespace cedar::read_api_test {

inline std::string fresh_db(const std::string& name) {
  std::string path = ::testing::TempDir() + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

inline RunRecord record(const std::string& suite, const std::string& name, int64_t seed,
                        int64_t world_size = 2) {
  RunRecord r;
  r.suite = suite;
  r.name = name;
  r.algorithm = name == "ps" ? "ps" : "dense";
  r.model = "resnet20";
  r.dataset = "cifar10";
  r.world_size = world_size;
  r.seed = seed;
  r.config = "name: " + name + "\nseed: " + std::to_string(seed);
  r.config_hash = stable_hash(suite + r.config + std::to_string(world_size));
  r.code_version = "v1.2-3-gabc";
  r.host = "node7";
  r.backend = "mpi";
  r.network = "10gbe";
  r.threads = 3;
  r.parameters = 272474;
  r.effective_momentum = 0.9;
  r.provenance = R"({"command":"cedar run x.yaml"})";
  r.results_mode = "wal";
  r.filesystem = "ext4";
  return r;
}

inline StepRow step_row(int64_t step, int64_t epoch, double wall_seconds) {
  StepRow s;
  s.step = step;
  s.epoch = epoch;
  s.wall_seconds = wall_seconds;
  s.compute_seconds = 0.25;
  s.payload_bytes = 60;
  s.bus_bytes = 30;
  s.payload_bytes_all = 100;
  s.dense_bytes = 50;
  s.train_loss = 2.0 - 0.125 * double(step);
  s.latency_steps = 2;
  return s;
}

// Runs `sql` on the database at `path` through SQLite itself.
inline void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << message;
}

}  // namespace cedar::read_api_test
