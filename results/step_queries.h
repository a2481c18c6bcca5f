#pragma once
// Typed reads of the steps and evals tables (results/schema.sql) for the reports: the timing of a
// run's steps and evaluations, the curves of completed runs, and byte sums over a window of steps.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/results_reader.h"

namespace cedar {

// When a step row was written, and the share of one rank's step it stands for: a parameter
// server's ssp / asp row is one worker's step, 1 / runs.workers; every other row 1.
struct StepTime {
  int64_t step = 0, epoch = 0;
  double wall_seconds = 0;  // since the start of training
  double share = 1;
};
// When an evaluation ended.
struct EvalTime {
  int64_t step = 0;         // steps completed when the evaluation ran
  double wall_seconds = 0;  // when it ended
};

// Run `run_id`'s step rows, in step order.
std::vector<StepTime> read_step_times(ResultsReader& db, int64_t run_id);

// One step's seconds and α–β terms as rank 0 recorded them (a parameter server's: the mean of the
// round's workers).
struct StepSeconds {
  int64_t step = 0;
  double compute_seconds = 0, comm_seconds = 0;  // measured
  int64_t latency_steps = 0, bus_bytes = 0;      // the α terms and bus bytes of its collectives
};
// Run `run_id`'s steps, in step order.
std::vector<StepSeconds> read_step_seconds(ResultsReader& db, int64_t run_id);
// Run `run_id`'s evaluations, in step order.
std::vector<EvalTime> read_eval_times(ResultsReader& db, int64_t run_id);
// The step rows of run `run_id`'s longest epoch; nullopt for a run without steps.
std::optional<int64_t> read_longest_epoch_steps(ResultsReader& db, int64_t run_id);

// One evaluation (schema.sql's evals) of a run, with the run's name and seed.
struct EvalPoint {
  int64_t run_id = 0;
  std::string name;
  int64_t seed = 0;
  int64_t step = 0;
  double epoch = 0, wall_seconds = 0;
  int64_t cum_payload_bytes = 0, cum_bus_bytes = 0;  // rank 0, cumulative
  double test_loss = 0, test_accuracy = 0;
  std::optional<double> train_loss, train_accuracy, consensus_distance;
};
// One step's training loss, with the run's name and seed.
struct LossPoint {
  int64_t run_id = 0;
  std::string name;
  int64_t seed = 0;
  int64_t step = 0;
  double train_loss = 0;
};

// The curves of the plots, from the latest completed run of each suite, name and seed in `suite`
// ("" : every suite); in order of name, seed and step.
std::vector<EvalPoint> read_completed_evals(ResultsReader& db, const std::string& suite);
std::vector<LossPoint> read_completed_losses(ResultsReader& db, const std::string& suite);

// The steps a claim's bytes are summed over: a step number floor, an epoch floor, and (last_epoch)
// only each run's own last epoch.
struct StepWindow {
  int64_t from_step = 0;
  int64_t from_epoch = -1;
  bool last_epoch = false;
};
// One seed's bytes over a window.
struct SeedWindowBytes {
  int64_t seed = 0;
  double payload_per_rank = 0;  // Σ payload_bytes_all / world_size
  int64_t bus_bytes = 0;        // Σ bus_bytes (rank 0)
  int64_t dense_bytes = 0;      // Σ dense_bytes
  int64_t steps = 0;            // step rows in the window
};
// For run name `name` of suite `suite` (exactly: "" is the suite named ""), the latest finished
// run of each seed and world size when it completed, summed over `window`; one row per seed that
// has steps there, in seed order.
std::vector<SeedWindowBytes> read_window_bytes(ResultsReader& db, const std::string& suite,
                                               const std::string& name, const StepWindow& window);

}  // namespace cedar
