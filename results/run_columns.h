#pragma once
// Internal to the results queries: the SQL that selects a RunRow's columns and the runs the
// reports show, and reading a RunRow back from a statement.
#include "results/run_queries.h"
#include "results/statement.h"

namespace cedar {

// The columns of a RunRow, of runs aliased r, in the order read_run_row reads them
// (kRunRowColumnCount).
#define CEDAR_RUN_ROW_COLUMNS                                                                  \
  "r.id, r.suite, r.name, r.algorithm, r.model, r.dataset, r.world_size, r.seed, r.config, "   \
  "r.config_hash, r.code_version, r.host, r.backend, r.network, r.threads, r.parameters, "     \
  "r.start_time, r.end_time, r.status, r.error, r.final_test_accuracy, r.best_test_accuracy, " \
  "r.wall_seconds, r.total_payload_bytes, r.total_bus_bytes, r.pid, r.heartbeat, "             \
  "r.effective_momentum, r.provenance, r.uuid, r.attempt, r.results_mode, r.filesystem, "      \
  "r.workers, r.servers"
constexpr int kRunRowColumnCount = 35;

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

// The columns CEDAR_RUN_ROW_COLUMNS selected, from column 0.
RunRow read_run_row(const Statement& st);

}  // namespace cedar
