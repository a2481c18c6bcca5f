#pragma once
// How runs write a results database. `wal`: every process writes the database itself, in SQLite's
// WAL mode, which needs all of them on one host. `shards`: each run's process writes only its own
// database in <db>.shards/ (rollback journal, one writer), and `cedar merge` folds closed shards
// into the main database under a lock that holds across hosts (results/merge.h). `auto` picks WAL
// on a local filesystem and shards on a shared one (NFS, Lustre, GPFS, ...).
#include <string>

#include "results/filesystem.h"

namespace cedar {

enum class ResultsMode { kWal, kShards };

struct ResolvedResultsMode {
  ResultsMode mode = ResultsMode::kWal;
  FilesystemInfo filesystem;  // of the database's folder
  std::string setting;        // auto, wal or shards, as configured
  std::string name() const { return mode == ResultsMode::kWal ? "wal" : "shards"; }
  // e.g. "shards (auto: nfs is shared between hosts)".
  std::string explain() const;
};

// The mode for database `db_path` under `setting` (auto | wal | shards); throws
// std::invalid_argument naming the value otherwise.
ResolvedResultsMode resolve_results_mode(const std::string& setting, const std::string& db_path);

// The folder of a database's shards, claim files and merge lock: "<db>.shards".
std::string shards_dir(const std::string& db_path);
// The folder of a database's checkpoints when train.checkpoint_dir is empty: "<db>.checkpoints".
std::string checkpoints_dir(const std::string& db_path);

}  // namespace cedar
