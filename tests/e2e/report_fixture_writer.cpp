// Writes a small results database for the report tests (tests/e2e/claim_history_test.sh,
// tests/e2e/regenerate_test.sh):
//   report_fixture_writer DB COMMIT
// gives suite "fixture": dense and topk at 2 ranks, seeds 1-3 each, with evaluations, bytes and
// times as the trainer and metering layer write them (tests/unit/results_fixture.h), each run
// recording source revision COMMIT and a command line with absolute paths, as a suite run from
// another folder records it.
#include <sqlite3.h>

#include <cstdio>
#include <exception>
#include <string>

#include "tests/unit/results_fixture.h"

namespace {

using cedar::fixture::CollectiveSpec;
using cedar::fixture::RunSpec;

RunSpec spec(const std::string& name, int64_t seed) {
  RunSpec s;
  s.suite = "fixture";
  s.name = name;
  s.algorithm = name;
  s.seed = seed;
  s.dense_bytes = 1'000'000;
  const double drop = name == "dense" ? 0 : 0.0041 * static_cast<double>(seed);
  s.final_accuracy = 0.8123 + 0.0037 * static_cast<double>(seed) - drop;
  s.best_accuracy = s.final_accuracy + 0.0011;
  s.wall_seconds = 2.5 + 0.13 * static_cast<double>(seed);
  s.evals = {{1.25, s.final_accuracy - 0.05}, {s.wall_seconds, s.final_accuracy}};
  if (name == "dense")
    s.collectives = {CollectiveSpec{"allreduce", 1, {1'000'000, 1'000'000}}};
  else
    s.collectives = {CollectiveSpec{"allgatherv", 1, {8'008, 8'008}}};
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DB COMMIT\n", argv[0]);
    return 2;
  }
  try {
    const std::string db = argv[1], commit = argv[2];
    {
      cedar::ResultStore store(db);
      for (const char* name : {"dense", "topk"})
        for (int64_t seed = 1; seed <= 3; ++seed)
          cedar::fixture::write_run(store, spec(name, seed));
    }
    // The revision and command line the trainer records (runner/train/provenance.h).
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    const std::string sql =
        "UPDATE runs SET code_version = substr('" + commit +
        "', 1, 7), provenance = json_object('commit', '" + commit + "', 'revision', substr('" +
        commit +
        "', 1, 7), 'diff', '', 'command', '/opt/elsewhere/build/cedar run "
        "/home/someone/cedar/experiments/fixture.yaml --db /tmp/scratch/fixture.db --set name=' "
        "|| name || ' --set train.seed=' || seed || ' --set ''note=a b'' --results-mode wal')";
    char* err = nullptr;
    const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) std::fprintf(stderr, "%s\n", err ? err : "update failed");
    sqlite3_free(err);
    sqlite3_close(h);
    return rc == SQLITE_OK ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_fixture_writer: %s\n", e.what());
    return 1;
  }
}
