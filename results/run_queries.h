#pragma once
// Typed reads of the runs table (results/schema.sql) for the reports: each run as a RunRow, and
// the per-run totals of its steps that the comparison table and the projections start from.
//
// "Shown" runs are those every report shows when a run was repeated: the latest finished (not
// 'running') run of each suite, name, seed and world size. A suite of "" selects every suite.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/results_reader.h"

namespace cedar {

// One row of the runs table; std::nullopt where the column is NULL (a run still running, or a
// row written before the column existed).
struct RunRow {
  int64_t id = 0;
  std::string suite, name, algorithm, model, dataset;
  int64_t world_size = 1, seed = 0;
  std::string config, config_hash, code_version, host, backend, network;
  int64_t threads = 1, parameters = 0;
  std::string start_time;
  std::optional<std::string> end_time;
  std::string status;  // running / completed / failed / diverged
  std::optional<std::string> error;
  std::optional<double> final_test_accuracy, best_test_accuracy, wall_seconds;
  std::optional<int64_t> total_payload_bytes, total_bus_bytes;
  std::optional<int64_t> pid;
  std::optional<double> heartbeat, effective_momentum;
  std::optional<std::string> provenance;  // JSON object
  std::optional<std::string> uuid;
  int64_t attempt = 0;
  std::optional<std::string> results_mode, filesystem;
  std::optional<int64_t> workers, servers;
};

// The shown runs of `suite`, in id order.
std::vector<RunRow> read_shown_runs(ResultsReader& db, const std::string& suite);

// A shown run with its steps summed for the comparison table. A parameter server's ssp / asp step
// row is one worker's step (step_stats 'gradients' = 1 of runs.workers), so the per-rank sums
// weight each row by that share (1 for every other row).
struct RunTotals {
  RunRow run;
  int64_t steps = 0;              // step rows
  int64_t payload_bytes_all = 0;  // Σ payload_bytes_all (every rank)
  int64_t bus_bytes = 0;          // Σ bus_bytes × share, rounded (rank 0)
  int64_t dense_bytes = 0;        // Σ dense_bytes
  double compute_seconds = 0;     // Σ compute_seconds × share
  int64_t latency_steps = 0;      // Σ latency_steps × share, rounded
  // Wall-clock of the first evaluation whose test accuracy reached the target; nullopt when none
  // did or the target is not > 0.
  std::optional<double> seconds_to_target;
};

// The shown runs of `suite` with their totals, in id order.
std::vector<RunTotals> read_run_totals(ResultsReader& db, const std::string& suite,
                                       double target_accuracy);

// A run's steps and communication summed as recorded (unweighted), for projections.
struct RunStepSums {
  RunRow run;
  int64_t steps = 0;              // step rows
  int64_t epochs = 0;             // distinct epochs among them
  double compute_seconds = 0;     // Σ compute_seconds
  int64_t latency_steps = 0;      // Σ latency_steps
  int64_t bus_bytes = 0;          // Σ bus_bytes
  int64_t dense_bytes = 0;        // Σ dense_bytes
  int64_t payload_bytes_all = 0;  // Σ payload_bytes_all
  double gradients = 0;           // Σ step_stats 'gradients' (parameter-server runs; 0 otherwise)
  // Payload the server ranks (rank < runs.servers) sent in 'send' and 'sendrecv' (comm_totals).
  int64_t server_send_payload_bytes = 0;
};

// With run_id > 0, that run whatever its status; else the shown runs of `suite` that completed.
// In id order.
std::vector<RunStepSums> read_run_step_sums(ResultsReader& db, const std::string& suite,
                                            int64_t run_id);

// When the shown runs of `suite` trained, together.
struct RunTimeSpan {
  int64_t runs = 0;
  std::optional<std::string> first_start, last_end;  // nullopt: no runs (or no end recorded)
  std::optional<double> run_seconds;  // Σ runs.wall_seconds; nullopt when none recorded it
};

RunTimeSpan read_run_time_span(ResultsReader& db, const std::string& suite);

}  // namespace cedar
