#pragma once
// Preflight: before `cedar suite` or `cedar sbatch` launches anything, every run of the suite is
// resolved and what it would load is checked, once per distinct data set, model and algorithm:
//   configuration  each run's configuration loads and its algorithm's parameters are valid (what
//                  `cedar run` checks first; a grid entry can set a value out of range);
//   data           the data set's files are there and readable, with valid headers and sizes
//                  (the readers' probes, datasets/readers.h: nothing is decoded);
//   models         the model builds for the data's channels, classes and image size;
//   sizes          one step's images (train.batch_size x the world size) fit in the training
//                  set, so that no rank's shard is smaller than a batch;
//   folders        the results database's folder and each checkpoint folder are writable and
//                  their filesystems hold the rows and checkpoints the runs would write.
// Problems are collected, not thrown one at a time: the report names each with the runs it stops,
// grouped as above. A run already completed in the database is not launched again: only its
// configuration is checked. Nothing is written: no database, no folder (a probe file is created
// in, and removed from, the nearest existing folder of each output).
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/suite/suite.h"

namespace cedar {

struct PreflightProblem {
  std::string group;              // configuration, data, models, sizes or folders
  std::string message;            // names the file, folder, key or value at fault
  std::vector<std::string> runs;  // the runs it stops
};

struct PreflightOptions {
  std::string db;            // the results database the runs write
  std::vector<size_t> runs;  // the runs about to launch, as indices into the suite (empty: all)
  bool environment = true;   // also data, models, sizes and folders (false: configurations only)
};

struct PreflightReport {
  std::vector<PreflightProblem> problems;  // in group order, then as found
  std::vector<std::string> fingerprints;   // per suite run; "" where its configuration fails
  size_t runs = 0;                         // runs in the suite
  size_t launching = 0;                    // runs whose data, model and folders were checked
  size_t data_sets = 0, models = 0;        // distinct ones probed and built
  double seconds = 0;                      // what the checks took
  bool ok() const { return problems.empty(); }
  bool configurations_ok() const;
  // How many runs the problems stop, e.g. "3 problems stop 2 of 12 runs".
  std::string summary() const;
  // What was checked, e.g. "12 run(s) checked: 1 data set, 1 model, in 0.05 s".
  std::string checked() const;
  // One line per problem under its group's heading, each ending with the runs it stops.
  std::string render() const;
};

// Checks `suite` (expanded with keep_invalid_runs, so that every invalid run is in it). Never
// throws for a run's problem; throws only when the checks themselves cannot run.
PreflightReport preflight(const Suite& suite, const PreflightOptions& opts);

// Thrown by `cedar suite` and `cedar sbatch` when the preflight found problems: the summary and
// the rendered report.
class PreflightError : public std::runtime_error {
 public:
  explicit PreflightError(const PreflightReport& report);
};

}  // namespace cedar
