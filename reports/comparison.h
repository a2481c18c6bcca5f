#pragma once
// The comparison table of a suite, computed from the results database: one row per run name
// (seeds aggregated as mean ± std), compared with the dense baseline of the same model, dataset
// and world size. No LibTorch here.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cedar {

struct RunResult {
  int64_t id = 0;
  std::string suite, name, algorithm, model, dataset, status;
  int64_t world_size = 1, seed = 0, steps = 0;
  int64_t workers = 0;  // ranks computing gradients: world_size but a parameter server's servers
                        // (0: world_size)
  double final_accuracy = 0, best_accuracy = 0, wall_seconds = 0;
  int64_t payload_bytes_per_rank = 0;  // mean over ranks of the bytes each rank sent
  int64_t bus_bytes = 0;               // rank 0
  int64_t dense_bytes_per_rank = 0;    // what dense fp32 allreduce would have sent
  double time_to_target = -1;      // wall-clock of the first evaluation at the target (-1: never)
  double compute_seconds = 0;      // rank 0, summed over steps
  int64_t latency_steps = 0;       // alpha terms of its collectives, summed over steps
  double images_per_second = 0;    // per rank, training (reports/throughput.h); 0: unknown
  double median_step_seconds = 0;  // one rank's step, after step 0 (reports/throughput.h)
  // The largest share of its hosts' CPU other processes used while it trained (< 0: not
  // recorded; reports/provenance_table.h).
  double other_load = -1;
  std::string amp = "off";  // train.amp (reports/precision.h)
  // Full-batch runs (reports/gap_rounds.h): the last step's gap (NaN: none) and the rounds to
  // train.target_gap (−1: not reached or none).
  double final_gap = std::numeric_limits<double>::quiet_NaN(), rounds_to_gap = -1;
};

// One completed run of a row: what the claims' verdicts test over seeds (reports/claims.h).
struct SeedRun {
  int64_t seed = 0;
  double final_accuracy = 0, best_accuracy = 0, wall_seconds = 0;
  double payload_compression = 0, wire_ratio = 0;  // this run's own, as in reports/byte_ratios.h
  std::vector<double> modeled_seconds;             // same order as network_profiles()
  double final_gap = std::numeric_limits<double>::quiet_NaN(), rounds_to_gap = -1;  // RunResult's
  double median_step_seconds = 0;                                                   // RunResult's
};

struct ComparisonRow {
  std::string name, algorithm, model, dataset;
  int64_t world_size = 1;
  int64_t workers = 0;  // world_size but a parameter server's servers (0: world_size)
  int runs = 0, completed = 0;
  double final_mean = 0, final_std = 0, best_mean = 0;
  double gap_to_dense = 0;  // final_mean - dense final_mean (accuracy points / 100)
  bool has_dense = false;
  double wall_mean = 0;
  // The time columns (wall, images per second, modeled seconds, time to target) are means over
  // the `timed_runs` completed seeds timed on a quiet host where there are any, else over all
  // (timed_beside_other_work); load_recorded: any seed recorded its hosts' load.
  int timed_runs = 0;
  bool timed_beside_other_work = false, load_recorded = false;
  // Training images per second on one rank (median over epochs, reports/throughput.h), mean over
  // the completed seeds that have it; 0: unknown.
  double images_per_second = 0;
  double payload_mb = 0;  // per rank, mean over seeds
  double bus_mb = 0;
  // Against dense SGD, as defined in reports/byte_ratios.h (0: nothing sent).
  double payload_compression = 0;
  double wire_ratio = 0;
  // Training time on each network profile (comm/network_model.h): compute seconds plus
  // the alpha-beta time of the collectives, mean over seeds; same order as network_profiles().
  std::vector<double> modeled_seconds;
  // Time to the target accuracy given to load_runs (mean over the seeds that reached it).
  double target = 0;
  int reached_target = 0;
  double time_to_target = -1;
  double target_speedup = 0;       // dense time to target / this run's
  std::string statuses;            // e.g. "3 completed" or "2 completed, 1 failed"
  std::string amp = "off";         // train.amp of its first run (the legend names mixed precision)
  std::vector<SeedRun> seed_runs;  // its completed runs, one per seed
};

// The latest run of each (name, seed) in `suite` (all suites when empty). With target > 0 each
// run's time to that test accuracy is read from its evaluations.
std::vector<RunResult> load_runs(const std::string& db_path, const std::string& suite,
                                 double target = 0);
std::vector<ComparisonRow> compare_runs(const std::vector<RunResult>& runs, double target = 0);
// The dense SGD baseline of `r`: a completed dense-algorithm row of the same model, dataset and
// workers (a parameter server's workers, its servers left out, as the claims count them), the one
// named "dense" where a suite has several (plain steps, large batches), else the first; nullptr
// when none.
const ComparisonRow* dense_baseline_row(const std::vector<ComparisonRow>& rows,
                                        const ComparisonRow& r);
// The row's modeled training time on the network profile named `profile` (0 when unknown).
double modeled_seconds_on(const ComparisonRow& r, const std::string& profile);

std::string render_markdown(const std::vector<ComparisonRow>& rows);
std::string render_csv(const std::vector<ComparisonRow>& rows);
std::string render_latex(const std::vector<ComparisonRow>& rows);

}  // namespace cedar
