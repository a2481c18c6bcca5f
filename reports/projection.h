#pragma once
// Time per epoch projected to more workers from what a run measured (`cedar project`).
//
// Weak scaling, as data-parallel training is run: the batch per rank stays fixed, so an epoch of
// N samples takes N / (P * batch) steps on P workers (measured steps/epoch * P0 / P, rounded down
// as the loader drops the last partial batch), and the compute time of a step (forward, backward,
// compression, optimizer: rank 0's mean) stays what it was at the measured P0.
//
// Communication per step comes from the collectives the run really made: comm_totals holds, per
// rank and collective kind, the calls and payload bytes over the whole run, so dividing by the
// steps gives the per-step mix (e.g. DGC: 1 allgatherv of ~70 kB plus 1 allreduce of the dense
// vectors). Each kind is then re-costed on P workers with the α–β model and the bus-byte rules of
// comm/network_model.h and bus_bytes.h, exactly as the metering layer costs it at P0:
//   allreduce of S bytes:       2(P-1) α + 2(P-1)/P · S β   — per-rank bytes bounded by 2S
//   allgather of s bytes/rank:  (P-1) α + (P-1) · s β       — grows linearly with P
//   allgatherv:                 twice the latency (counts, then data), the bytes of an allgather
//   broadcast of S bytes:       ceil(log2 P) α + S β
// That is why sparse and quantized schemes that allgather lose their advantage over a dense
// allreduce as P grows. Runs measured on one rank record no bytes (a lone rank sends nothing),
// so they cannot be projected. comm_totals are run totals, so the mix is the run's average:
// phases such as DGC's sparsity warm-up or post-local SGD's dense epochs weigh in at their share
// of the steps. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

namespace cedar {

struct NetworkProfile;

// One collective kind as a run used it, per training step (run totals / steps).
struct CollectiveMix {
  std::string op;    // allreduce, allgather, allgatherv, broadcast, barrier, send, sendrecv, recv
  double calls = 0;  // per step
  double payload_bytes = 0;  // per step, what one rank contributes (mean over ranks)
  double bus_bytes = 0;      // per step, rank 0 (used for broadcast, whose payload is the root's)
};

// What one run (or the mean of a run name's seeds) measured.
struct RunMeasurement {
  int64_t id = 0;
  std::string suite, name, algorithm, model, dataset, status;
  int64_t world_size = 1, seed = 0;
  int seeds = 1;                        // runs averaged into this one
  int64_t steps = 0;                    // steps recorded
  int64_t steps_per_epoch = 0;          // steps of its longest epoch
  double compute_seconds_per_step = 0;  // rank 0, mean over steps
  double compute_seconds_seed_std = 0;  // standard deviation of the above over seeds (0: one seed)
  double dense_payload_bytes = 0;       // per step: a dense fp32 allreduce's payload (dense_bytes)
  std::vector<CollectiveMix> collectives;
  // Per step, rank 0, as the steps table recorded them (α terms and bus bytes): the mix above
  // reproduces them at world_size, which `cedar project` checks and reports.
  double recorded_latency_steps = 0, recorded_bus_bytes = 0;
  std::string unusable;  // why it cannot be projected (empty: it can)
};

// The α and β terms of one step's collectives on `workers` ranks.
struct CollectiveCost {
  double latency_steps = 0;
  double bus_bytes = 0;
};
// Throws std::runtime_error for a collective kind without a cost rule.
CollectiveCost collective_cost(const CollectiveMix& mix, int workers);
CollectiveCost step_cost(const RunMeasurement& m, int workers);

struct ProjectionPoint {
  int workers = 1;
  bool measured = false;        // the run's own world size
  int64_t steps_per_epoch = 0;  // 0: an epoch holds less than one global batch
  double compute_seconds = 0, comm_seconds = 0, total_seconds = 0;  // per epoch
  // Bus bytes each rank pushes per step, by collective family (MB = 1e6 bytes).
  double allreduce_mb = 0, allgather_mb = 0, broadcast_mb = 0;
  // Per step at this P, as defined in reports/byte_ratios.h (payload compression does not
  // depend on P).
  double payload_compression = 0, wire_ratio = 0;
  double speedup_vs_measured = 0;  // this run's epoch time at its measured P0 / at this P
  double speedup_vs_dense = 0;  // dense epoch time / this run's, both at this P (0: no dense run)
};

struct Projection {
  RunMeasurement basis;                 // seeds averaged
  std::string network;                  // profile name
  std::string dense_name;               // the baseline of speedup_vs_dense (empty: none)
  std::vector<ProjectionPoint> points;  // the measured world size first, then `workers`
};

// Completed runs of `suite` (all suites when empty; the latest run of each name, seed and world
// size, as in the comparison table), or only the run `run_id` (> 0) whatever its status.
std::vector<RunMeasurement> load_measurements(const std::string& db_path, const std::string& suite,
                                              int64_t run_id = 0);
// Seeds of one name averaged (same name, model, dataset and world size).
std::vector<RunMeasurement> average_seeds(const std::vector<RunMeasurement>& runs);

// The dense run of the same model and dataset among `baselines`, preferring the same suite, then
// the run named "dense" (a suite may have several dense-algorithm runs), then the measured world
// size (nullptr: none).
const RunMeasurement* dense_baseline(const std::vector<RunMeasurement>& baselines,
                                     const RunMeasurement& m);

ProjectionPoint project_point(const RunMeasurement& m, int workers, const NetworkProfile& net);
// One projection per usable subject; the dense baseline (same model and dataset, preferably the
// same suite and measured world size) is taken from `baselines`.
std::vector<Projection> project_runs(const std::vector<RunMeasurement>& subjects,
                                     const std::vector<RunMeasurement>& baselines,
                                     const std::vector<int>& workers, const NetworkProfile& net);

std::string render_projection_markdown(const std::vector<Projection>& projections);
std::string render_projection_csv(const std::vector<Projection>& projections);

}  // namespace cedar
