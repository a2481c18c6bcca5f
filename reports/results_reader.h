#pragma once
// Reading the results database for the reports: a read-only connection, and the run columns the
// comparison table and the projections both start their queries with. No LibTorch here.
#include <sqlite3.h>

#include <string>

namespace cedar {

// A read-only connection (busy timeout 60 s, as the writers'), closed on every path out.
class ResultsReader {
 public:
  // Throws std::runtime_error naming `path` when it cannot be opened.
  explicit ResultsReader(const std::string& path);
  ~ResultsReader();
  ResultsReader(const ResultsReader&) = delete;
  ResultsReader& operator=(const ResultsReader&) = delete;

  // A statement for the caller to finalize; throws std::runtime_error naming the path when `sql`
  // does not fit the database (not a Cedar results database).
  sqlite3_stmt* prepare(const char* sql);

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// Column i as text; "" for NULL.
std::string column_text(sqlite3_stmt* st, int i);

// The first 9 columns of a runs query (0 to 8), in the order read_run_columns reads them.
constexpr const char* kRunColumns =
    "r.id, r.suite, r.name, r.algorithm, r.model, r.dataset, r.status, r.world_size, r.seed";

// True for row r of runs when it is the latest finished run of its suite, name, seed and world
// size: the one every report shows when a run was repeated.
#define CEDAR_LATEST_FINISHED_RUN                                                         \
  "r.id = (SELECT MAX(r2.id) FROM runs r2 WHERE r2.suite = r.suite AND r2.name = r.name " \
  "AND r2.seed = r.seed AND r2.world_size = r.world_size AND r2.status <> 'running')"

// The share of one rank's training step that step row s (of run r) stands for: a parameter
// server's ssp and asp rows are each one worker's step (step_stats 'gradients' = 1 of r.workers),
// so summing them over-counts a worker's bytes, compute and images W times; its bsp rounds (every
// worker's gradient) and every other run's rows are a whole step of each rank (1).
#define CEDAR_STEP_SHARE                                                                      \
  "COALESCE((SELECT g.value FROM step_stats g WHERE g.run_id = s.run_id AND g.step = s.step " \
  "AND g.key = 'gradients') / NULLIF(r.workers, 0), 1)"

// Fills the fields named after kRunColumns (RunResult and RunMeasurement both have them).
template <class Run>
void read_run_columns(sqlite3_stmt* st, Run& r) {
  r.id = sqlite3_column_int64(st, 0);
  r.suite = column_text(st, 1);
  r.name = column_text(st, 2);
  r.algorithm = column_text(st, 3);
  r.model = column_text(st, 4);
  r.dataset = column_text(st, 5);
  r.status = column_text(st, 6);
  r.world_size = sqlite3_column_int64(st, 7);
  r.seed = sqlite3_column_int64(st, 8);
}

}  // namespace cedar
