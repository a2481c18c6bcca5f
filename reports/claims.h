#pragma once
// Papers' claims as data. A suite's `claims:` section states each claim in checkable form:
//   claims:
//     - text: "DGC at 99.9% sparsity keeps the baseline's accuracy"
//       source: "Lin et al., ICLR 2018, Table 2"
//       setting: "ResNet-110, CIFAR-10, 4-32 workers, 164 epochs"   # where the paper measured it
//       reduced: "ResNet-20, Fashion-MNIST 20k, 4 workers, 8 epochs" # what this suite checks it on
//       run: dgc                      # the run name in the suite
//       baseline: dense               # optional: the run compared against (default: dense SGD
//                                     # of the same model, dataset and ranks)
//       metric: accuracy_gap          # see kClaimMetrics
//       at_least: -1.0                # and/or at_most
//       seed_tolerance: 1             # accuracy metrics: bounds widen by this many seed spreads
//       window: {from_epoch: 1}       # byte metrics: steady state only (from_step or from_epoch,
//                                     # both counted from 0, or last_epoch: true)
//       profile: 1gbe                 # modeled_speedup only
// Each claim is evaluated on the measured runs: reproduced, not reproduced, or not enough runs
// (the run or its baseline is missing). A verdict states the seeds it rests on and whether it
// was checked at a reduced scale. No LibTorch here.
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
// network carries), wall_speedup (baseline wall / run wall), modeled_speedup (baseline / run
// modeled training time on `profile`). `compression` is accepted as the older name of
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
  double seed_tolerance = 0;
  ClaimWindow window;
};

// Bytes of one run over a window, summed over its completed seeds.
struct WindowBytes {
  double payload_per_rank = 0, bus = 0, dense_payload = 0;
  int64_t steps = 0;
};
// Reads a run's bytes over a window (run name → totals); nullopt when the run has no steps there.
using WindowReader =
    std::function<std::optional<WindowBytes>(const std::string& run, const ClaimWindow&)>;
// A WindowReader over the latest completed runs of `suite` in the database at `db_path`.
WindowReader database_window_reader(const std::string& db_path, const std::string& suite);

struct ClaimVerdict {
  Claim claim;
  std::string verdict;  // "reproduced", "not reproduced", "not enough runs"
  std::optional<double> measured;
  int seeds = 0;           // completed runs the measurement rests on (the claimed run's)
  int baseline_seeds = 0;  // and its baseline's (0 when the metric needs none)
  // The bounds actually applied: the claimed ones widened by seed_tolerance × the seed spread.
  std::optional<double> applied_at_least, applied_at_most;
};

// Reads the `claims:` section of an experiment file (empty when absent). Throws ConfigError
// naming file:line:column for a malformed claim.
std::vector<Claim> load_claims(const std::string& path);
// A claim with a window needs `windows`; without one it reads "not enough runs".
std::vector<ClaimVerdict> evaluate_claims(const std::vector<Claim>& claims,
                                          const std::vector<ComparisonRow>& rows,
                                          const WindowReader& windows = {});
std::string render_claims_markdown(const std::vector<ClaimVerdict>& verdicts);

}  // namespace cedar
