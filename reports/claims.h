#pragma once
// Papers' claims as data. A suite's `claims:` section states each claim in checkable form:
//   claims:
//     - text: "4-bit QSGD matches full-precision accuracy"
//       source: "Alistarh et al., NeurIPS 2017, Table 1"
//       run: qsgd                     # the run name in the suite
//       metric: accuracy_gap          # see kClaimMetrics
//       at_least: -1.0                # and/or at_most
//       profile: 1gbe                 # modeled_speedup only
// Each claim is evaluated on the measured runs: reproduced, not reproduced, or not enough runs
// (the run or its dense baseline is missing). No LibTorch here.
#include <optional>
#include <string>
#include <vector>

#include "reports/comparison.h"

namespace cedar {

// accuracy (final test accuracy, %), accuracy_gap (run − dense, points), best_accuracy (%),
// payload_compression (dense fp32 payload / the run's payload: the papers' definition),
// wire_ratio (dense SGD's bus bytes at the same world size / the run's bus bytes: what the
// network carries), wall_speedup (dense wall / run wall), modeled_speedup (dense / run modeled
// training time on `profile`). `compression` is accepted as the older name of
// payload_compression and read as it.
extern const std::vector<std::string> kClaimMetrics;

struct Claim {
  std::string text, source, run, metric, profile;
  std::optional<double> at_least, at_most;
};

struct ClaimVerdict {
  Claim claim;
  std::string verdict;  // "reproduced", "not reproduced", "not enough runs"
  std::optional<double> measured;
};

// Reads the `claims:` section of an experiment file (empty when absent). Throws ConfigError
// naming file:line:column for a malformed claim.
std::vector<Claim> load_claims(const std::string& path);
std::vector<ClaimVerdict> evaluate_claims(const std::vector<Claim>& claims,
                                          const std::vector<ComparisonRow>& rows);
std::string render_claims_markdown(const std::vector<ClaimVerdict>& verdicts);

}  // namespace cedar
