#pragma once
// Shard mode (results/results_mode.h): the run of each `cedar run` process writes its own database
// <db>.shards/<uuid>.<attempt>.db, and only that process writes it: it holds <shard>.lock
// (results/lock_file.h) from before the file exists until after it closed it. A shard is closed
// once that lock is gone or stale; `cedar merge` folds closed shards into the main database
// (results/merge.h). A resumed run (a requeued task: new host, new pid) writes a new shard for
// its next attempt, holding the rows from its checkpoint's step on; the merge replaces the
// earlier attempt's rows from that step on.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "results/lock_file.h"
#include "results/store.h"

namespace cedar {

// A shard writer's heartbeat this old means it is gone (its pid settles it sooner on its host).
constexpr double kShardStaleSeconds = 120;

struct ShardFile {
  std::string path;  // <db>.shards/<uuid>.<attempt>.db
  std::string name;  // <uuid>.<attempt>.db
  std::string uuid;
  int64_t attempt = 0;
};

std::string shard_path(const std::string& db, const std::string& uuid, int64_t attempt);
// The shards of `db`, ordered by run and attempt (none when there is no shard folder).
std::vector<ShardFile> list_shards(const std::string& db);
// Closed: no process writes it any more (its lock is gone or stale). `writer` then says who held
// it, when the lock was stale.
bool shard_closed(const ShardFile& shard, double stale_seconds, std::string* writer = nullptr);

// One process's shard, open for writing: the lock, then the store.
struct ShardWriter {
  std::unique_ptr<LockFile> lock;
  std::unique_ptr<ResultStore> store;
  std::string path;
};
// Creates the shard of (uuid, attempt) and records which run and attempt it holds. Throws
// StoreError naming the shard when another live process holds it or it cannot be written.
ShardWriter open_shard(const std::string& db, const std::string& uuid, int64_t attempt,
                       int64_t resumed_from_step);

// A run as recorded in the main database or a closed shard (open shards are live runs).
struct RecordedRun {
  std::string uuid;
  int64_t attempt = 0;
  std::string status;  // a closed shard's 'running' run counts as failed: its writer is gone
  double heartbeat = 0;
};

// Every record of a run with this fingerprint: closed shards first, then the main database (a
// shard merged meanwhile is then found there).
std::vector<RecordedRun> recorded_runs(const std::string& db, const std::string& fingerprint);
// True when a run with this fingerprint completed, in the main database or a closed shard.
bool completed_in_results(const std::string& db, const std::string& fingerprint);
// The latest run with this fingerprint (its highest attempt, latest heartbeat) when it failed.
std::optional<RecordedRun> find_resumable_run(const std::string& db,
                                              const std::string& fingerprint);
// The attempt a run continues with: one past the highest recorded in the main database or named
// by any shard file, open or closed.
int64_t next_attempt(const std::string& db, const std::string& uuid);

}  // namespace cedar
