#include "results/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "results/statement.h"
#include "results/uuid.h"

namespace cedar {
namespace {

constexpr int kRowsPerCommit = 50;
constexpr double kSecondsPerCommit = 2.0;

}  // namespace

ResultStore::ResultStore(const std::string& path, Journal journal)
    : path_(path), db_(open_results_database(path, journal)) {}

ResultStore::~ResultStore() {
  try {
    flush();
  } catch (...) {
  }
  sqlite3_close(db_);
}

void ResultStore::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw StoreError("results database " + path_ + ": " + msg);
  }
}

void ResultStore::begin() { exec("BEGIN IMMEDIATE"); }

void ResultStore::commit() { exec("COMMIT"); }

void ResultStore::flush() {
  if (pending_steps_.empty()) return;
  in_transaction([&] { write_pending_steps(); });
}

void ResultStore::in_transaction(const std::function<void()>& body) {
  begin();
  try {
    body();
    commit();
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);  // keeps the first error
    throw;
  }
}

int64_t ResultStore::begin_run(const RunRecord& r) {
  flush();
  Statement st(
      db_, path_,
      "INSERT INTO runs (suite, name, algorithm, model, dataset, world_size, seed, config, "
      "config_hash, code_version, host, backend, threads, parameters, start_time, network, pid, "
      "heartbeat, effective_momentum, provenance, uuid, attempt, results_mode, filesystem, "
      "workers, "
      "servers, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?, 'running')");
  st.bind(1, r.suite).bind(2, r.name).bind(3, r.algorithm).bind(4, r.model).bind(5, r.dataset);
  st.bind(6, r.world_size).bind(7, r.seed).bind(8, r.config).bind(9, r.config_hash);
  st.bind(10, r.code_version).bind(11, r.host).bind(12, r.backend).bind(13, r.threads);
  st.bind(14, r.parameters).bind(15, utc_now_iso()).bind(16, r.network);
  st.bind(17, static_cast<int64_t>(::getpid())).bind(18, unix_now()).bind(19, r.effective_momentum);
  st.bind(20, r.provenance).bind(21, r.uuid.empty() ? new_uuid() : r.uuid).bind(22, r.attempt);
  st.bind(23, r.results_mode).bind(24, r.filesystem);
  st.bind(25, r.workers > 0 ? r.workers : r.world_size).bind(26, r.servers);
  st.run();
  return sqlite3_last_insert_rowid(db_);
}

void ResultStore::record_shard(const std::string& uuid, int64_t attempt,
                               int64_t resumed_from_step) {
  flush();
  in_transaction([&] {
    exec("DELETE FROM shard_info");
    Statement st(db_, path_, "INSERT INTO shard_info VALUES (?,?,?)");
    st.bind(1, uuid).bind(2, attempt).bind(3, resumed_from_step);
    st.run();
  });
}

void ResultStore::add_step(int64_t run_id, const StepRow& s) {
  if (pending_steps_.empty()) oldest_pending_ = std::chrono::steady_clock::now();
  pending_steps_.emplace_back(run_id, s);
  double age =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - oldest_pending_).count();
  if (static_cast<int>(pending_steps_.size()) >= kRowsPerCommit || age >= kSecondsPerCommit)
    flush();
}

void ResultStore::write_pending_steps() {
  if (pending_steps_.empty()) return;
  Statement st(db_, path_, "INSERT INTO steps VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Statement stat(db_, path_, "INSERT INTO step_stats VALUES (?,?,?,?)");
  Statement level(db_, path_, "INSERT INTO step_levels VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  Statement beat(db_, path_, "UPDATE runs SET heartbeat=? WHERE id=?");
  beat.bind(1, unix_now()).bind(2, pending_steps_.front().first);
  beat.run();
  for (const auto& [run_id, s] : pending_steps_) {
    for (const auto& [key, value] : s.stats) {
      stat.reset();
      stat.bind(1, run_id).bind(2, s.step).bind(3, key).bind(4, value);
      stat.run();
    }
    for (const auto& l : s.levels) {
      level.reset();
      level.bind(1, run_id).bind(2, s.step).bind(3, l.level).bind(4, l.ranks).bind(5, l.profile);
      level.bind(6, l.calls).bind(7, l.payload_bytes).bind(8, l.bus_bytes);
      level.bind(9, l.latency_steps).bind(10, l.modeled_comm_seconds).bind(11, l.comm_seconds);
      level.run();
    }
    st.reset();
    st.bind(1, run_id).bind(2, s.step).bind(3, s.epoch).bind(4, s.wall_seconds);
    st.bind(5, s.compute_seconds).bind(6, s.comm_seconds).bind(7, s.payload_bytes);
    st.bind(8, s.bus_bytes).bind(9, s.payload_bytes_all).bind(10, s.cum_payload_bytes);
    st.bind(11, s.cum_bus_bytes).bind(12, s.dense_bytes).bind(13, s.train_loss);
    st.bind(14, s.train_accuracy).bind(15, s.learning_rate).bind(16, s.latency_steps);
    st.bind(17, s.modeled_comm_seconds);
    st.run();
  }
  pending_steps_.clear();
}

void ResultStore::add_eval(int64_t run_id, const EvalRow& e) {
  flush();  // the steps before it are kept even if the database refuses this row
  in_transaction([&] {
    Statement st(db_, path_, "INSERT INTO evals VALUES (?,?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, run_id).bind(2, e.step).bind(3, e.epoch).bind(4, e.wall_seconds);
    st.bind(5, e.cum_payload_bytes).bind(6, e.cum_bus_bytes).bind(7, e.test_loss);
    st.bind(8, e.test_accuracy).bind(9, e.train_loss).bind(10, e.train_accuracy);
    st.bind(11, e.consensus_distance);
    st.run();
  });
}

void ResultStore::add_comm_totals(int64_t run_id, const std::vector<CommTotalRow>& rows) {
  flush();
  in_transaction([&] {
    for (const auto& r : rows) {
      Statement st(db_, path_, "INSERT OR REPLACE INTO comm_totals VALUES (?,?,?,?,?,?,?,?)");
      st.bind(1, run_id).bind(2, r.rank).bind(3, r.op).bind(4, r.calls).bind(5, r.elements);
      st.bind(6, r.payload_bytes).bind(7, r.bus_bytes).bind(8, r.seconds);
      st.run();
    }
  });
}

void ResultStore::set_provenance_entry(int64_t run_id, const std::string& key,
                                       const std::string& json) {
  flush();
  Statement st(db_, path_,
               "UPDATE runs SET provenance = json_set(CASE WHEN json_valid(provenance) THEN "
               "provenance ELSE '{}' END, '$.' || ?, json(?)) WHERE id=?");
  st.bind(1, key).bind(2, json).bind(3, run_id);
  st.run();
}

void ResultStore::finish_run(int64_t run_id, const std::string& status, const std::string& error,
                             const RunSummary& s) {
  flush();
  Statement st(db_, path_,
               "UPDATE runs SET status=?, error=?, end_time=?, final_test_accuracy=?, "
               "best_test_accuracy=?, wall_seconds=?, total_payload_bytes=?, total_bus_bytes=? "
               "WHERE id=?");
  st.bind(1, status).bind(2, error).bind(3, utc_now_iso()).bind(4, s.final_test_accuracy);
  st.bind(5, s.best_test_accuracy).bind(6, s.wall_seconds).bind(7, s.total_payload_bytes);
  st.bind(8, s.total_bus_bytes).bind(9, run_id);
  st.run();
}

void ResultStore::mark_failed(const std::string& path, int64_t run_id, const std::string& reason) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return;
  }
  sqlite3_busy_timeout(db, 10000);
  sqlite3_stmt* stmt = nullptr;
  const char* sql =
      "UPDATE runs SET status='failed', error=?, end_time=? WHERE id=? AND status='running'";
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK) {
    std::string now = utc_now_iso();
    sqlite3_bind_text(stmt, 1, reason.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, now.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(stmt, 3, run_id);
    sqlite3_step(stmt);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

bool ResultStore::has_completed(const std::string& config_hash) {
  flush();
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT COUNT(*) FROM runs WHERE config_hash=? AND status='completed'", -1,
                         &st, nullptr) != SQLITE_OK)
    throw StoreError("results database " + path_ + ": " + sqlite3_errmsg(db_));
  sqlite3_bind_text(st, 1, config_hash.c_str(), -1, SQLITE_TRANSIENT);
  bool found = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
  sqlite3_finalize(st);
  return found;
}

std::string run_fingerprint(const std::string& resolved_config, int64_t world_size) {
  return stable_hash(resolved_config + "\nworld_size: " + std::to_string(world_size));
}

std::string stable_hash(const std::string& text) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a 64-bit offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

double unix_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace cedar
