#pragma once
// Papers' claims as data. A suite's `claims:` section states each claim in checkable form:
//   claims:
//     - text: "DGC at 99.9% sparsity keeps the baseline's accuracy"
//       source: "Lin et al., ICLR 2018, Table 2"
//       setting: "ResNet-110, CIFAR-10, 4-32 workers, 164 epochs"   # where the paper measured it
//       reduced: "ResNet-20, Fashion-MNIST 20k, 4 workers, 8 epochs" # what this suite checks it on
//       kind: finding                 # or accounting (required, see below)
//       run: dgc                      # the run name in the suite
//       baseline: dense               # optional: the run compared against (default: dense SGD
//                                     # of the same model, dataset and ranks)
//       metric: accuracy_gap          # see kClaimMetrics
//       at_least: -1.0                # and/or at_most: the claimed region
//       window: {from_epoch: 1}       # byte metrics: steady state only (from_step or from_epoch,
//                                     # both counted from 0, or last_epoch: true)
//       profile: 1gbe                 # modeled_speedup only
//       control: gradient-dropping    # findings, optional: a negative control, a run the method
//                                     # must be told apart from (see below)
//
// Two kinds of claim, and every claim in a file states its own (there is no default):
//   accounting: bytes that follow from a format or construction (QSGD's fixed-width levels,
//     top-k's index-value pairs, one model average every H steps), and the optimality gap of a
//     fixed point a construction places (final_gap: majority-vote signSGD on the sign
//     counterexample settles where the majority's targets are, by construction). Only byte
//     metrics (payload_compression, wire_ratio) and final_gap can be accounting. Bytes are
//     checked on the totals of the measured runs, a gap on every seed ("holds" / "does not
//     hold"); they can only fail if metering or the construction's code is broken, so they are
//     rendered in a table of their own and never counted as reproductions.
//   finding: everything else: what training measures, bytes that depend on the gradients included
//     (DGC's sampled threshold keeps k to 1.3k pairs; LAG skips uploads by its gradients).
//     A finding is a test over seeds:
//     - each arm needs at least 3 completed seeds; with fewer the verdict is "insufficient seeds";
//     - the 95% confidence interval of the measured quantity (reports/confidence_interval.h)
//       lies entirely inside the claimed region: "reproduced"; entirely outside: "not
//       reproduced"; otherwise "inconclusive". The interval's half-width is the smallest margin
//       the seeds resolve, printed beside every verdict.
//     - with a negative `control:` (a method that should do worse), a finding that would read
//       "reproduced" reads "not discriminating" where the interval of method − control holds 0.
//     - accuracy, best_accuracy: the one-sample interval of the mean over seeds (points);
//     - accuracy_gap (run − baseline, points): paired by seed (Student t over the per-seed
//       differences) where both arms ran exactly the same seeds (a seed fixes initialisation and
//       data order in both), Welch's t where they did not;
//     - ratios (wall_speedup, step_speedup, modeled_speedup, and byte findings): the interval of
//       the mean log-ratio, exponentiated, i.e. of the geometric mean ratio. Times are measurements
//       repeated once per seed; a seed does not fix the machine's load, so times are never
//       paired: Welch's t on log baseline time − log run time. Byte findings (e.g. LAG's skipped
//       uploads, which depend on the gradients) are paired by seed like accuracy gaps
//       (against a named baseline; without one, the one-sample interval of the log-ratio).
//   A finding's `control:` run is measured the same way; the interval of method − control (for
//   ratios method ÷ control) that contains 0 (1) says the seeds cannot separate the method from
//   its negative control, whatever the verdict: "not separated" beside it.
//   A missing run or baseline reads "not enough runs" for either kind. No LibTorch here.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reports/comparison.h"

namespace cedar {

// accuracy (final test accuracy, %), accuracy_gap (run − baseline, points), best_accuracy (%),
// payload_compression (dense fp32 payload / the run's payload: the papers' definition),
// wire_ratio (dense SGD's bus bytes at the same world size / the run's bus bytes: what the
// network carries), wall_speedup (baseline wall / run wall), step_speedup (the baseline's median
// step seconds / the run's, after step 0 and without evaluations: the throughput ratio at the same
// batch size, reports/throughput.h), modeled_speedup (baseline / run
// modeled training time on `profile`), gap_rounds_ratio (full-batch runs: the baseline's
// communication rounds to its train.target_gap ÷ the run's, paired by seed), final_gap (the last
// step's f(θ) − f*). `compression` is accepted as the older name of
// payload_compression and read as it.
extern const std::vector<std::string> kClaimMetrics;

// The steps a byte metric is measured over (all steps by default).
struct ClaimWindow {
  int64_t from_step = 0;    // steps numbered from 0, as in the steps table
  int64_t from_epoch = -1;  // epochs numbered from 0 (-1: not used)
  bool last_epoch = false;
  bool whole_run() const { return from_step <= 0 && from_epoch < 0 && !last_epoch; }
  std::string describe() const;  // e.g. "epochs ≥ 4" ("" for the whole run)
};

struct Claim {
  std::string text, source, run, metric, profile = "1gbe";
  std::optional<double> at_least, at_most;
  std::string setting, reduced, baseline;
  std::string kind = "finding";  // or "accounting"
  std::string control;           // findings: a negative-control run ("" for none)
  ClaimWindow window;
};

// Bytes of one completed run (one seed) over a window.
struct WindowBytes {
  int64_t seed = 0;
  double payload_per_rank = 0, bus = 0, dense_payload = 0;
  int64_t steps = 0;
};
// Reads a run's bytes over a window, seed by seed (empty when the run has no steps there).
using WindowReader =
    std::function<std::vector<WindowBytes>(const std::string& run, const ClaimWindow&)>;
// A WindowReader over the latest completed runs of `suite` in the database at `db_path`.
WindowReader database_window_reader(const std::string& db_path, const std::string& suite);

struct ClaimVerdict {
  Claim claim;
  // findings: "reproduced", "not reproduced", "inconclusive", "not discriminating",
  // "insufficient seeds";
  // accounting: "holds", "does not hold"; either: "not enough runs".
  std::string verdict;
  // findings: the mean over seeds (a gap: of the differences; a ratio: the geometric mean);
  // accounting: the ratio of the runs' byte totals, or the seed's final gap nearest the bound.
  std::optional<double> measured;
  // findings with enough seeds: the 95% interval of `measured`, and the margin the seeds
  // resolve: its half-width in points, or for a ratio the factor f of [m / f, m × f].
  std::optional<double> low, high, margin;
  bool ratio = false;   // the metric is a ratio (the margin is a factor)
  bool paired = false;  // the interval pairs the arms by seed (else Welch's, or one sample)
  // With a control: "separated", "not separated", "insufficient seeds" or "not enough runs", and
  // the interval of method − control (a ratio: method ÷ control).
  std::string control_verdict;
  std::optional<double> control_low, control_high;
  int seeds = 0;           // completed runs the measurement rests on (the claimed run's)
  int baseline_seeds = 0;  // and its baseline's (0 when the metric needs none)
};

// The fewest completed seeds per arm a finding's verdict rests on.
constexpr int kMinSeeds = 3;

// Reads the `claims:` section of an experiment file (empty when absent). Throws ConfigError
// naming file:line:column for a malformed claim.
std::vector<Claim> load_claims(const std::string& path);
// Claims of kClaimMetrics that are byte ratios: payload_compression, wire_ratio.
bool is_byte_metric(const std::string& metric);
// A claim with a window needs `windows`; without one it reads "not enough runs".
std::vector<ClaimVerdict> evaluate_claims(const std::vector<Claim>& claims,
                                          const std::vector<ComparisonRow>& rows,
                                          const WindowReader& windows = {});
std::string render_claims_markdown(const std::vector<ClaimVerdict>& verdicts);

}  // namespace cedar
