#include "results/database.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "results/schema_sql.h"
#include "results/statement.h"
#include "results/store.h"

namespace cedar {
namespace {

constexpr int kBusyTimeoutMs = 60000;

sqlite3* open_db(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw StoreError("cannot open results database " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  return db;
}

// sqlite3_exec; on failure returns its result code and sets `msg` to SQLite's message.
int run_sql(sqlite3* db, const std::string& sql, std::string& msg) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) msg = err ? err : sqlite3_errmsg(db);
  sqlite3_free(err);
  return rc;
}

// Runs the idempotent set-up of a connection (journal mode, schema, migration). When several
// processes open one new database at the same moment, SQLite can answer SQLITE_BUSY at once
// instead of waiting (switching the journal mode needs the file to itself), so this waits and
// retries up to the busy timeout.
void exec_setup(sqlite3* db, const std::string& path, const std::string& sql) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (std::string msg;;) {
    const int primary = run_sql(db, sql, msg) & 0xff;
    if (primary == SQLITE_OK) return;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || Clock::now() > deadline)
      throw StoreError("results database " + path + ": " + msg);
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

void exec(sqlite3* db, const std::string& path, const std::string& sql) {
  std::string msg;
  if (run_sql(db, sql, msg) != SQLITE_OK) throw StoreError("results database " + path + ": " + msg);
}

// Databases written by earlier versions gain the run and evaluation columns added since (NULL for
// old rows, except that every run gets a uuid), then the schema version. Inside one write
// transaction, so that two processes opening an old database at once do not both add the columns.
void migrate(sqlite3* db, const std::string& path) {
  exec_setup(db, path, "BEGIN IMMEDIATE");
  try {
    const int version = schema_version(db, path);
    if (version > kSchemaVersion)
      throw StoreError("results database " + path + " has schema version " +
                       std::to_string(version) + ", newer than this cedar's " +
                       std::to_string(kSchemaVersion) +
                       ": open it with the cedar that wrote it (runs.code_version)");
    if (version < kSchemaVersion) {
      std::set<std::string> have;
      {
        Statement cols(db, path, "PRAGMA table_info(runs)");
        while (cols.next()) have.insert(cols.text_column(1));
      }
      const std::pair<const char*, const char*> added[] = {
          {"pid", "INTEGER"},
          {"heartbeat", "REAL"},
          {"effective_momentum", "REAL"},
          {"provenance", "TEXT"},
          {"uuid", "TEXT"},
          {"attempt", "INTEGER NOT NULL DEFAULT 0"},
          {"results_mode", "TEXT"},
          {"filesystem", "TEXT"},
          {"workers", "INTEGER"},
          {"servers", "INTEGER"}};
      for (const auto& [column, type] : added)
        if (!have.count(column))
          exec(db, path, std::string("ALTER TABLE runs ADD COLUMN ") + column + " " + type);
      std::set<std::string> eval_columns;
      {
        Statement cols(db, path, "PRAGMA table_info(evals)");
        while (cols.next()) eval_columns.insert(cols.text_column(1));
      }
      if (!eval_columns.count("consensus_distance"))
        exec(db, path, "ALTER TABLE evals ADD COLUMN consensus_distance REAL");
      std::set<std::string> level_columns;
      {
        Statement cols(db, path, "PRAGMA table_info(step_levels)");
        while (cols.next()) level_columns.insert(cols.text_column(1));
      }
      if (!level_columns.count("comm_seconds"))
        exec(db, path, "ALTER TABLE step_levels ADD COLUMN comm_seconds REAL");
      // A version-4 uuid from SQLite's random bytes for each run that has none.
      exec(db, path,
           "UPDATE runs SET uuid = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' "
           "|| substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) "
           "|| substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))) WHERE uuid IS NULL");
      exec(db, path, "CREATE UNIQUE INDEX IF NOT EXISTS runs_by_uuid ON runs(uuid)");
      exec(db, path, "PRAGMA user_version = " + std::to_string(kSchemaVersion));
    }
    exec(db, path, "COMMIT");
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

}  // namespace

void delete_rows_from_step(sqlite3* db, const std::string& path, int64_t run_id, int64_t step) {
  const char* replaced[] = {"DELETE FROM main.steps WHERE run_id=? AND step>=?",
                            "DELETE FROM main.step_stats WHERE run_id=? AND step>=?",
                            "DELETE FROM main.step_levels WHERE run_id=? AND step>=?",
                            "DELETE FROM main.evals WHERE run_id=? AND step>?"};
  for (const char* sql : replaced) {
    Statement del(db, path, sql);
    del.bind(1, run_id).bind(2, step);
    del.run();
  }
  Statement totals(db, path, "DELETE FROM main.comm_totals WHERE run_id=?");
  totals.bind(1, run_id);
  totals.run();
}

int schema_version(sqlite3* db, const std::string& path, const std::string& schema) {
  Statement st(db, path, ("PRAGMA " + schema + ".user_version").c_str());
  return st.next() ? static_cast<int>(st.int_column(0)) : 0;
}

sqlite3* open_results_database(const std::string& path, Journal journal) {
  std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec)
    throw StoreError("cannot create folder for results database " + path + ": " + ec.message());
  sqlite3* db = open_db(path);
  try {
    if (journal == Journal::kWal) {
      exec_setup(db, path, "PRAGMA journal_mode=WAL");
      exec_setup(db, path, "PRAGMA synchronous=NORMAL");
    } else {
      exec_setup(db, path, "PRAGMA journal_mode=DELETE");
      exec_setup(db, path, "PRAGMA synchronous=FULL");
    }
    exec_setup(db, path, kSchemaSql);
    migrate(db, path);
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  return db;
}

}  // namespace cedar
