#include "results/merge.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "results/results_mode.h"
#include "results/statement.h"

namespace cedar {
namespace {

// Test hook: CEDAR_MERGE_HOLD=locked|in-transaction|committed makes the merge stop at that point
// of the first shard it merges (lock taken; rows written, not committed; committed, shard file
// not yet removed), write its pid into CEDAR_MERGE_HOLD_FILE and wait there until it is killed.
void hold_if_asked(const char* point) {
  const char* want = std::getenv("CEDAR_MERGE_HOLD");
  const char* file = std::getenv("CEDAR_MERGE_HOLD_FILE");
  if (!want || !file || std::string(want) != point) return;
  std::ofstream(file) << ::getpid() << "\n";
  for (;;) ::pause();
}

void exec(sqlite3* db, const std::string& path, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw StoreError("results database " + path + ": " + msg);
  }
}

// The columns of `table` in the main database, but `skip`.
std::string columns(sqlite3* db, const std::string& path, const std::string& table,
                    const std::string& skip) {
  std::string list;
  Statement st(db, path, ("PRAGMA main.table_info(" + table + ")").c_str());
  while (st.next()) {
    const std::string name = st.text_column(1);
    if (name != skip) list += (list.empty() ? "" : ", ") + name;
  }
  return list;
}

void remove_shard_files(const ShardFile& shard) {
  std::error_code ec;
  for (const char* suffix : {"", "-journal", ".lock"})
    std::filesystem::remove(shard.path + suffix, ec);
}

// What a closed shard holds: its run's id there and the attempt's place.
struct ShardContent {
  bool has_run = false;
  int64_t local_id = 0, resumed_from_step = -1;
  std::string status, code_version;
};

ShardContent read_shard(sqlite3* db, const std::string& path) {
  ShardContent c;
  Statement info(db, path, "SELECT resumed_from_step FROM shard.shard_info");
  if (info.next()) c.resumed_from_step = info.int_column(0);
  Statement run(db, path, "SELECT id, status, code_version FROM shard.runs");
  if (run.next()) {
    c.has_run = true;
    c.local_id = run.int_column(0);
    c.status = run.text_column(1);
    c.code_version = run.text_column(2);
  }
  return c;
}

// Inside the shard's transaction: the run's row in main (new, or updated to this attempt) with
// the rows this attempt replaces removed. Returns the run's id in main.
int64_t merge_run_row(sqlite3* db, const std::string& path, const ShardFile& shard,
                      const ShardContent& c, MergeResult& result) {
  int64_t id = 0;
  {
    Statement find(db, path, "SELECT id FROM main.runs WHERE uuid=?");
    find.bind(1, shard.uuid);
    if (find.next()) id = find.int_column(0);
  }
  if (!id) {
    const std::string cols = columns(db, path, "runs", "id");
    Statement add(
        db, path,
        ("INSERT INTO main.runs (" + cols + ") SELECT " + cols + " FROM shard.runs WHERE id=?")
            .c_str());
    add.bind(1, c.local_id);
    add.run();
    ++result.new_runs;
    return sqlite3_last_insert_rowid(db);
  }
  // A first attempt (resumed_from_step -1) replaces everything.
  delete_rows_from_step(db, path, id, c.resumed_from_step);
  Statement up(db, path,
               "UPDATE main.runs SET (status, error, end_time, final_test_accuracy, "
               "best_test_accuracy, wall_seconds, total_payload_bytes, total_bus_bytes, host, pid, "
               "heartbeat, attempt) = (SELECT status, error, end_time, final_test_accuracy, "
               "best_test_accuracy, wall_seconds, total_payload_bytes, total_bus_bytes, host, pid, "
               "heartbeat, attempt FROM shard.runs WHERE id=?) WHERE id=?");
  up.bind(1, c.local_id).bind(2, id);
  up.run();
  return id;
}

// The rows of the shard's run, renumbered to run `id` of main. Returns the step rows copied.
int64_t copy_rows(sqlite3* db, const std::string& path, int64_t local_id, int64_t id) {
  int64_t step_rows = 0;
  for (const char* table : {"steps", "step_stats", "step_levels", "evals", "comm_totals"}) {
    const std::string cols = columns(db, path, table, "run_id");
    Statement copy(db, path,
                   ("INSERT INTO main." + std::string(table) + " (run_id, " + cols +
                    ") SELECT ?, " + cols + " FROM shard." + table + " WHERE run_id=?")
                       .c_str());
    copy.bind(1, id).bind(2, local_id);
    copy.run();
    if (std::string(table) == "steps") step_rows = sqlite3_changes(db);
  }
  return step_rows;
}

// Runs in the attached shard: 0 when its writer was killed before it recorded one (or while it
// was creating the file, before any table existed).
int64_t shard_run_count(sqlite3* db, const std::string& path) {
  {
    Statement tables(db, path, "SELECT COUNT(*) FROM shard.sqlite_master WHERE name='runs'");
    if (!tables.next() || tables.int_column(0) == 0) return 0;
  }
  Statement runs(db, path, "SELECT COUNT(*) FROM shard.runs");
  return runs.next() ? runs.int_column(0) : 0;
}

bool already_merged(sqlite3* db, const std::string& path, const std::string& name) {
  Statement st(db, path, "SELECT COUNT(*) FROM main.merged_shards WHERE name=?");
  st.bind(1, name);
  return st.next() && st.int_column(0) > 0;
}

// Folds one closed shard in (one transaction). False when it was refused.
bool merge_one(sqlite3* db, const std::string& path, const ShardFile& shard,
               const std::string& writer, MergeResult& result) {
  {
    Statement attach(db, path, "ATTACH DATABASE ? AS shard");
    attach.bind(1, shard.path);
    attach.run();
  }
  struct Detach {
    sqlite3* db;
    ~Detach() { sqlite3_exec(db, "DETACH DATABASE shard", nullptr, nullptr, nullptr); }
  } detach{db};
  const int version = schema_version(db, shard.path, "shard");
  ShardContent c;
  if (shard_run_count(db, path) > 0) {
    if (version != kSchemaVersion) {
      std::string written_by;
      try {
        Statement st(db, path, "SELECT code_version FROM shard.runs");
        if (st.next()) written_by = ", written by cedar " + st.text_column(0);
      } catch (const StoreError&) {
      }
      result.refused.push_back(shard.path + ": schema version " + std::to_string(version) +
                               written_by + "; this cedar merges version " +
                               std::to_string(kSchemaVersion) +
                               " shards: merge it with the cedar that wrote it");
      return false;
    }
    c = read_shard(db, path);
  }
  exec(db, path, "BEGIN IMMEDIATE");
  try {
    int64_t id = 0, step_rows = 0;
    if (!already_merged(db, path, shard.name) && c.has_run) {
      id = merge_run_row(db, path, shard, c, result);
      step_rows = copy_rows(db, path, c.local_id, id);
      if (c.status == "running") {  // its writer is gone without a word
        Statement fail(db, path,
                       "UPDATE main.runs SET status='failed', error=?, end_time=? WHERE id=?");
        fail.bind(1, "stale: the process writing it (" +
                         (writer.empty() ? std::string("no lock") : writer) + ") is gone");
        fail.bind(2, utc_now_iso()).bind(3, id);
        fail.run();
      }
    }
    Statement done(db, path, "INSERT OR IGNORE INTO main.merged_shards VALUES (?,?,?,?,?,?)");
    done.bind(1, shard.name).bind(2, shard.uuid).bind(3, shard.attempt).bind(4, id);
    done.bind(5, step_rows).bind(6, unix_now());
    done.run();
    hold_if_asked("in-transaction");
    exec(db, path, "COMMIT");
    result.step_rows += step_rows;
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return true;
}

}  // namespace

MergeResult merge_shards(const std::string& db_path, const MergeOptions& options) {
  MergeResult result;
  const std::vector<ShardFile> shards = list_shards(db_path);
  if (shards.empty()) return result;
  std::unique_ptr<LockFile> lock;
  try {
    lock = LockFile::acquire(shards_dir(db_path) + "/merge.lock", options.lock_stale_seconds,
                             options.wait_seconds);
  } catch (const std::exception& e) {
    throw StoreError(e.what());
  }
  if (!lock) {
    result.lock_timeout = true;
    return result;
  }
  hold_if_asked("locked");
  sqlite3* db = open_results_database(db_path, options.journal);
  struct Close {
    sqlite3* db;
    ~Close() { sqlite3_close(db); }
  } close{db};
  std::string blocked_uuid;  // a run whose earlier attempt is still open: later ones wait
  for (const ShardFile& shard : list_shards(db_path)) {
    if (!lock->held()) throw StoreError(lock->path() + ": the merge lock was taken from us");
    if (already_merged(db, db_path, shard.name)) {
      remove_shard_files(shard);
      ++result.already;
      continue;
    }
    std::string writer;
    if (shard.uuid == blocked_uuid || !shard_closed(shard, options.shard_stale_seconds, &writer)) {
      blocked_uuid = shard.uuid;
      ++result.open;
      continue;
    }
    if (!merge_one(db, db_path, shard, writer, result)) continue;
    ++result.merged;
    hold_if_asked("committed");
    remove_shard_files(shard);
  }
  return result;
}

std::string describe_merge(const MergeResult& r) {
  std::string s = "merged " + std::to_string(r.merged) +
                  " shard(s): " + std::to_string(r.new_runs) + " new run(s), " +
                  std::to_string(r.step_rows) + " step rows";
  if (r.already) s += "; " + std::to_string(r.already) + " merged earlier, removed";
  if (r.open) s += "; " + std::to_string(r.open) + " still being written, left for later";
  if (!r.refused.empty()) s += "; " + std::to_string(r.refused.size()) + " refused";
  if (r.lock_timeout) s = "another merge held the lock throughout: nothing merged";
  return s;
}

}  // namespace cedar
