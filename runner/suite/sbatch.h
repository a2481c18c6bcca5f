#pragma once
// `cedar sbatch`: the Slurm batch script that runs a suite. Either one job runs every run of the
// suite in turn, or a job array runs one run per array task (task i = the suite's run i, in the
// grid's deterministic order). Each run goes through `cedar suite --only i`, which skips a run
// already completed in the database and launches the others with `srun --mpi=pmix` inside the
// allocation, so a requeued job simply starts the same commands again against the same database.
// Each task ends with `cedar merge`, which folds the runs' shards into the database when the
// results mode is shards (results/merge.h; several tasks merging at once take turns).
// Requeueing: Slurm sends USR1 to the batch shell `grace_seconds` before the time limit; the
// script then calls `scontrol requeue`, which stops the running steps (each run marks itself
// failed on SIGTERM) and queues the job again. No LibTorch here.
#include <string>
#include <vector>

#include "runner/suite/suite.h"

namespace cedar {

struct SbatchOptions {
  int nodes = 1;
  int ntasks_per_node = 1;
  int gpus_per_node = 0;    // 0: no GPU request
  std::string partition;    // empty: the cluster's default partition
  std::string time;         // [D-]HH:MM:SS; empty: the partition's default limit
  bool array = false;       // one array task per run
  int grace_seconds = 120;  // USR1 (and requeue) this long before the time limit; 0: off
};

// What the job runs, with absolute paths fixed at submission.
struct JobCommand {
  std::string cedar;       // the cedar executable
  std::string workdir;     // the job starts here (relative data paths keep their meaning)
  std::string experiment;  // the suite's YAML file
  std::string db;          // results database shared by every run
  std::string job_dir;     // job.sh, the job's output and one log per run
  std::vector<std::string> overrides;  // --set assignments given to every `cedar suite`
  std::string results_mode = "auto";   // --results-mode of every `cedar suite` and the merge
  bool skip_preflight = false;         // every `cedar suite` with --skip-preflight
};

// Seconds in a Slurm time limit written [D-]HH:MM:SS; throws std::invalid_argument naming the
// value.
long parse_time_limit(const std::string& text);

// Checks the options and that every run of `suite` fits in the allocation (its world size at
// most nodes × ntasks-per-node; a run over NCCL on GPUs, one GPU per task); throws
// std::invalid_argument naming the option and value.
void check_sbatch_options(const SbatchOptions& opts, const Suite& suite);

// Expands the suite of `experiment` for a job; throws ConfigError when the file has no grid:
// section (a single experiment runs with `cedar run` under srun instead). Runs whose own
// configuration does not load are kept with their error, for the preflight to report them all.
Suite load_job_suite(const std::string& experiment, const RegisteredAlgorithms& registered,
                     const std::vector<std::string>& overrides);

// The log file of run `index` inside the job folder, e.g. "run-03-dgc-99.9_np4.log".
std::string run_log_name(size_t index, size_t run_count, const std::string& run_name);

// The job folder for a suite submitted at `unix_time` (local time): <folder of
// db>/slurm/<suite>-<YYYYmmdd-HHMMSS>.
std::string job_dir_for(const std::string& db, const std::string& suite_name, long unix_time);

// The batch script's text.
std::string job_script(const SbatchOptions& opts, const JobCommand& cmd, const Suite& suite);

}  // namespace cedar
