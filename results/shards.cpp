#include "results/shards.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "results/results_mode.h"
#include "results/statement.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

// An existing database opened for reading (read-write, so that a hot journal left by a writer
// that died is rolled back); null when the file does not exist.
sqlite3* open_existing(const std::string& path) {
  if (!fs::exists(path)) return nullptr;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return nullptr;  // removed meanwhile (merged), or not a database: nothing to read
  }
  sqlite3_busy_timeout(db, 60000);
  return db;
}

// Calls `row` for each run with `fingerprint` in database `path` (no file: no rows). `in_shard`:
// a 'running' run there counts as failed (the shard is closed: its writer is gone).
void for_each_run(const std::string& path, const std::string& fingerprint, bool in_shard,
                  const std::function<void(const RecordedRun&)>& row) {
  sqlite3* db = open_existing(path);
  if (!db) return;
  try {
    bool has_runs = false, has_uuid = false;
    {
      Statement cols(db, path, "PRAGMA table_info(runs)");
      while (cols.next()) {
        has_runs = true;
        has_uuid = has_uuid || cols.text_column(1) == "uuid";
      }
    }
    // A database another process has just created and not yet given its tables (SQLite creates
    // the file on open, the schema in a later transaction) records no run yet.
    if (!has_runs) {
      sqlite3_close(db);
      return;
    }
    // A main database of an older schema has no uuids yet (the next merge migrates it).
    Statement st(db, path,
                 has_uuid ? "SELECT uuid, attempt, status, heartbeat FROM runs WHERE config_hash=?"
                          : "SELECT '', 0, status, heartbeat FROM runs WHERE config_hash=?");
    st.bind(1, fingerprint);
    while (st.next()) {
      RecordedRun r{st.text_column(0), st.int_column(1), st.text_column(2), st.real_column(3)};
      if (in_shard && r.status == "running") r.status = "failed";
      row(r);
    }
  } catch (const StoreError&) {
    sqlite3_close(db);
    if (in_shard) return;  // a shard being merged and removed right now: it is in main then
    throw;
  }
  sqlite3_close(db);
}

}  // namespace

std::string shard_path(const std::string& db, const std::string& uuid, int64_t attempt) {
  return shards_dir(db) + "/" + uuid + "." + std::to_string(attempt) + ".db";
}

std::vector<ShardFile> list_shards(const std::string& db) {
  std::vector<ShardFile> shards;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(shards_dir(db), ec)) {
    const std::string name = entry.path().filename().string();
    // <36-character uuid>.<attempt>.db
    if (name.size() < 41 || name.compare(name.size() - 3, 3, ".db") != 0 || name[36] != '.')
      continue;
    const std::string attempt = name.substr(37, name.size() - 40);
    if (attempt.empty() || !std::all_of(attempt.begin(), attempt.end(), ::isdigit)) continue;
    shards.push_back({entry.path().string(), name, name.substr(0, 36), std::stoll(attempt)});
  }
  std::sort(shards.begin(), shards.end(), [](const ShardFile& a, const ShardFile& b) {
    return a.uuid != b.uuid ? a.uuid < b.uuid : a.attempt < b.attempt;
  });
  return shards;
}

bool shard_closed(const ShardFile& shard, double stale_seconds, std::string* writer) {
  const std::optional<LockOwner> owner = read_lock_owner(shard.path + ".lock");
  if (!owner) return true;
  if (!lock_owner_stale(*owner, stale_seconds)) return false;
  if (writer) *writer = describe_lock_owner(*owner);
  return true;
}

ShardWriter open_shard(const std::string& db, const std::string& uuid, int64_t attempt,
                       int64_t resumed_from_step) {
  ShardWriter w;
  w.path = shard_path(db, uuid, attempt);
  std::error_code ec;
  fs::create_directories(shards_dir(db), ec);
  if (ec) throw StoreError(shards_dir(db) + ": cannot create the shard folder: " + ec.message());
  try {
    w.lock = LockFile::try_acquire(w.path + ".lock", kShardStaleSeconds);
  } catch (const std::exception& e) {
    throw StoreError(e.what());
  }
  if (!w.lock) {
    const auto owner = read_lock_owner(w.path + ".lock");
    throw StoreError(w.path + ": attempt " + std::to_string(attempt) + " of run " + uuid +
                     " is being written by " +
                     (owner ? describe_lock_owner(*owner) : std::string("another process")));
  }
  w.store = std::make_unique<ResultStore>(w.path, Journal::kRollback);
  w.store->record_shard(uuid, attempt, resumed_from_step);
  return w;
}

std::vector<RecordedRun> recorded_runs(const std::string& db, const std::string& fingerprint) {
  std::vector<RecordedRun> runs;
  auto keep = [&](const RecordedRun& r) { runs.push_back(r); };
  for (const ShardFile& shard : list_shards(db))
    if (shard_closed(shard, kShardStaleSeconds)) for_each_run(shard.path, fingerprint, true, keep);
  for_each_run(db, fingerprint, false, keep);
  return runs;
}

bool completed_in_results(const std::string& db, const std::string& fingerprint) {
  for (const RecordedRun& r : recorded_runs(db, fingerprint))
    if (r.status == "completed") return true;
  return false;
}

std::optional<RecordedRun> find_resumable_run(const std::string& db,
                                              const std::string& fingerprint) {
  std::map<std::string, RecordedRun> by_run;  // a run's highest attempt speaks for it
  for (const RecordedRun& r : recorded_runs(db, fingerprint)) {
    if (r.uuid.empty()) continue;
    auto [it, added] = by_run.emplace(r.uuid, r);
    if (!added && r.attempt > it->second.attempt) it->second = r;
  }
  const RecordedRun* latest = nullptr;  // of several runs, the one written to last
  for (const auto& [uuid, r] : by_run)
    if (!latest || r.heartbeat > latest->heartbeat) latest = &r;
  if (latest && latest->status == "failed") return *latest;
  return std::nullopt;
}

int64_t next_attempt(const std::string& db, const std::string& uuid) {
  int64_t highest = -1;
  for (const ShardFile& shard : list_shards(db))
    if (shard.uuid == uuid) highest = std::max(highest, shard.attempt);
  if (sqlite3* main = open_existing(db)) {
    try {
      Statement st(main, db, "SELECT attempt FROM runs WHERE uuid=?");
      st.bind(1, uuid);
      if (st.next()) highest = std::max(highest, st.int_column(0));
    } catch (const StoreError&) {  // an older schema: no uuids there
    }
    sqlite3_close(main);
  }
  return highest + 1;
}

}  // namespace cedar
