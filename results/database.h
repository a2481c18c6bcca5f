#pragma once
// Opening a results database: creating the file and schema (results/schema.sql), migrating one
// written by an older version, and the journal it is written through.
#include <cstdint>
#include <string>

struct sqlite3;

namespace cedar {

// PRAGMA user_version of the schema this build writes. 1: the schema before versions were
// recorded (user_version 0 on disk); 2: run uuids, attempts, results mode, shards; 3: per-level
// traffic of each step (step_levels); 4: the consensus distance of each evaluation
// (evals.consensus_distance); 5: workers and servers of each run (runs.workers, runs.servers; NULL
// in older rows).
constexpr int kSchemaVersion = 6;

// WAL: readers and one writer at once, all processes on one host. Rollback: a journal file
// beside the database, for a database that only one process at a time writes on a shared
// filesystem (shards, and the main database in shard mode).
enum class Journal { kWal, kRollback };

// Opens `path` for reading and writing (creating folders, file and schema as needed), with the
// store's busy timeout and `journal`, migrated to kSchemaVersion. Throws StoreError naming the
// path when it cannot, or when the database is of a newer schema than this build's.
sqlite3* open_results_database(const std::string& path, Journal journal);

// The rows of run `run_id` (in the connection's main database) that an attempt resumed from the
// checkpoint after `step` steps writes again: steps, their levels and algorithm values from `step`
// on, evaluations after it, all communication totals. Inside the caller's transaction.
void delete_rows_from_step(sqlite3* db, const std::string& path, int64_t run_id, int64_t step);

// The schema version of the open database `schema` ("main" or an attached name).
int schema_version(sqlite3* db, const std::string& path, const std::string& schema = "main");

}  // namespace cedar
