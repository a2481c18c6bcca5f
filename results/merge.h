#pragma once
// `cedar merge`: folds the closed shards of a database (results/shards.h) into the main database.
// - Exclusive across hosts: the merge holds <db>.shards/merge.lock (results/lock_file.h); a second
//   merge waits for it, and only a stale lock (its owner gone) is broken.
// - One transaction per shard, which also records the shard in merged_shards: a merge killed at any
//   moment leaves the main database as it was before that shard or after it, and the next merge
//   goes on; a shard already recorded is only removed (merging twice adds nothing).
// - A run's attempts merge in order, as one run (one row, keyed by its uuid): an attempt that
//   resumed from step S replaces the rows of the steps from S on (evaluations after S, all
//   communication totals), as `cedar run --resume` does in a WAL database.
// - A shard of another schema version is refused (left in place, named in the result).
#include <cstdint>
#include <string>
#include <vector>

#include "results/database.h"
#include "results/shards.h"

namespace cedar {

struct MergeOptions {
  Journal journal = Journal::kRollback;  // of the main database (results/results_mode.h)
  double wait_seconds = 600;             // for the merge lock
  double lock_stale_seconds = 60;        // a merge lock's heartbeat this old is broken
  double shard_stale_seconds = kShardStaleSeconds;
};

struct MergeResult {
  int merged = 0;                    // shards folded in by this merge
  int already = 0;                   // shards found merged earlier (their files removed now)
  int open = 0;                      // shards still being written, left for a later merge
  int64_t new_runs = 0;              // runs the main database did not have
  int64_t step_rows = 0;             // step rows copied
  std::vector<std::string> refused;  // one message per shard of another schema version
  bool lock_timeout = false;         // another merge held the lock for all of wait_seconds
};

// Throws StoreError naming the database when the main database cannot be opened or written.
MergeResult merge_shards(const std::string& db, const MergeOptions& options);

// "merged 3 shard(s): 3 new run(s), 96 step rows; 1 still being written", for the command line.
std::string describe_merge(const MergeResult& result);

}  // namespace cedar
