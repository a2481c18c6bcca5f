#pragma once
// Rank 0's place for a run's rows, by results mode (results/results_mode.h): in WAL mode the main
// database itself; in shard mode the run's own shard, <db>.shards/<uuid>.<attempt>.db. Also whether
// the run continues a failed run of the same configuration from that run's checkpoint (`cedar run
// --resume`), found in the main database or (shard mode) in closed shards as well.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "config/experiment_config.h"
#include "results/lock_file.h"
#include "results/results_mode.h"
#include "results/store.h"
#include "runner/train/run_options.h"

namespace cedar {

struct RunResults {
  ResolvedResultsMode mode;
  std::unique_ptr<LockFile> shard_lock;  // shard mode: held while the shard is written
  std::unique_ptr<ResultStore> store;    // closed before the lock is released
  std::string path;                      // the file `store` writes
  int64_t run_id = -1;                   // the run's id in that file
  std::string uuid;
  int64_t resumed_step = -1;  // steps the continued run's checkpoint holds (-1: a new run)
};

// Rank 0. Continuing needs opts.resume, train.checkpoint, a failed latest run with this
// `fingerprint` and a complete checkpoint of it; otherwise a new run begins with the record
// `make_record` gives (its uuid, attempt, mode and filesystem are filled in here).
std::unique_ptr<RunResults> open_run_results(const ExperimentConfig& cfg, const RunOptions& opts,
                                             const std::string& fingerprint, int world_size,
                                             const std::function<RunRecord()>& make_record);

}  // namespace cedar
