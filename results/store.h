#pragma once
// The SQLite results store (schema in results/schema.sql). Rank 0 writes. In WAL mode several
// processes of one host may write one database at once (busy timeout); in shard mode each run's
// process writes its own shard through a rollback journal (results/shards.h). Rows are committed
// in small transactions so a run that dies loses at most the last few steps, never earlier rows
// or other runs.
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "results/database.h"

struct sqlite3;

namespace cedar {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunRecord {
  std::string suite, name, algorithm, model, dataset;
  int64_t world_size = 1;
  int64_t seed = 0;
  std::string config;  // resolved YAML
  std::string config_hash;
  std::string code_version, host, backend, network;
  int64_t threads = 1;
  int64_t parameters = 0;
  // The momentum the updates get: optimizer.momentum, or what the algorithm applies itself.
  double effective_momentum = 0;
  std::string provenance;                // JSON object (runner/train/provenance.h)
  std::string uuid;                      // globally unique id (empty: begin_run makes one)
  int64_t attempt = 0;                   // 0, then +1 each time the run is resumed
  std::string results_mode, filesystem;  // how and where results are written
  // The ranks that compute gradients (0: world_size) and the parameter-server ranks (0 for
  // all-reduce and gossip runs, where every rank is a worker).
  int64_t workers = 0, servers = 0;
};

// One level of sub-communicators in one step (schema.sql's step_levels).
struct StepLevelRow {
  std::string level, profile;
  int64_t ranks = 0, calls = 0, payload_bytes = 0, bus_bytes = 0, latency_steps = 0;
  double modeled_comm_seconds = 0;
  double comm_seconds = 0;  // measured inside the level's communicators, this rank
};

struct StepRow {
  int64_t step = 0, epoch = 0;
  double wall_seconds = 0, compute_seconds = 0, comm_seconds = 0;
  int64_t payload_bytes = 0, bus_bytes = 0, payload_bytes_all = 0;
  int64_t cum_payload_bytes = 0, cum_bus_bytes = 0, dense_bytes = 0;
  double train_loss = 0, train_accuracy = 0, learning_rate = 0;
  int64_t latency_steps = 0;
  double modeled_comm_seconds = 0;
  std::vector<std::pair<std::string, double>> stats;  // algorithm-reported values (step_stats)
  std::vector<StepLevelRow> levels;                   // per-level traffic (step_levels)
};

struct EvalRow {
  int64_t step = 0;
  double epoch = 0, wall_seconds = 0;
  int64_t cum_payload_bytes = 0, cum_bus_bytes = 0;
  double test_loss = 0, test_accuracy = 0;
  double train_loss = 0, train_accuracy = 0;
  // (1/P) Σ_i ‖x_i − x̄‖² over the parameters at this evaluation (evaluator.h); NULL in rows
  // written before schema version 3.
  double consensus_distance = 0;
};

struct CommTotalRow {
  int64_t rank = 0;
  std::string op;
  int64_t calls = 0, elements = 0, payload_bytes = 0, bus_bytes = 0;
  double seconds = 0;
};

struct RunSummary {
  double final_test_accuracy = 0, best_test_accuracy = 0, wall_seconds = 0;
  int64_t total_payload_bytes = 0, total_bus_bytes = 0;
};

// This machine's host name: what a run record's `host` holds, and what mark_stale_runs() compares
// it with to tell a run of this host (checked by pid) from one elsewhere (checked by heartbeat).
std::string this_host();

class ResultStore {
 public:
  // Opens (creating folders, file and schema as needed). Throws StoreError naming the path when
  // the database cannot be created or written.
  explicit ResultStore(const std::string& path, Journal journal = Journal::kWal);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  const std::string& path() const { return path_; }

  int64_t begin_run(const RunRecord& run);  // status 'running'
  std::string run_uuid(int64_t run_id);
  // In a shard: the run and attempt it holds, and the step its rows start at (-1: from the start).
  void record_shard(const std::string& uuid, int64_t attempt, int64_t resumed_from_step);
  void add_step(int64_t run_id, const StepRow& row);  // buffered; committed every few rows
  void add_eval(int64_t run_id, const EvalRow& row);  // committed at once, with pending steps
  void add_comm_totals(int64_t run_id, const std::vector<CommTotalRow>& rows);
  // Sets `key` of the run's provenance JSON object to the JSON value `json` (e.g. what was
  // measured only at the run's end); a run without provenance gets an object holding it.
  void set_provenance_entry(int64_t run_id, const std::string& key, const std::string& json);
  void flush();
  // status: completed / failed / diverged. Flushes pending rows first.
  void finish_run(int64_t run_id, const std::string& status, const std::string& error,
                  const RunSummary& summary);

  // True when a run with this fingerprint completed (suites skip it).
  bool has_completed(const std::string& config_hash);

  // Liveness and resume (results/store_resume.cpp).
  // Marks failed every 'running' run whose process is gone: on this host, its pid no longer
  // exists; elsewhere, its heartbeat is older than stale_seconds. Returns how many.
  int mark_stale_runs(double stale_seconds = 3600);
  // The id of the latest run with this fingerprint when that run failed (0 otherwise).
  int64_t find_resumable(const std::string& config_hash);
  // Makes failed run `run_id` running again from its checkpoint after `step` steps: rows it
  // wrote after that point (steps >= step, evaluations after it, communication totals) go.
  void reopen_run(int64_t run_id, int64_t step);
  // Suites sharing a database: true when this process now holds the run with this fingerprint
  // (no live claim by another process); release_claim gives it up.
  bool try_claim(const std::string& config_hash);
  void release_claim(const std::string& config_hash);

  // Marks a run failed through a fresh connection (used when the process is going down).
  static void mark_failed(const std::string& path, int64_t run_id, const std::string& reason);

 private:
  void exec(const std::string& sql);
  void begin();
  void commit();
  // Runs body inside BEGIN IMMEDIATE ... COMMIT; rolls back and rethrows when it throws, so no
  // transaction is left open to swallow later writes.
  void in_transaction(const std::function<void()>& body);
  void write_pending_steps();

  std::string path_;
  sqlite3* db_ = nullptr;
  // Step rows wait here and are written in one short transaction every few rows or seconds,
  // so no write lock is held between steps.
  std::vector<std::pair<int64_t, StepRow>> pending_steps_;
  std::chrono::steady_clock::time_point oldest_pending_;
};

// Stable 64-bit FNV-1a hash as 16 hex digits (stable across builds and machines).
std::string stable_hash(const std::string& text);
// The fingerprint of a run: its resolved configuration and world size.
std::string run_fingerprint(const std::string& resolved_config, int64_t world_size);
// Seconds since the Unix epoch (wall clock, for heartbeats).
double unix_now();
// Current UTC time as ISO 8601.
std::string utc_now_iso();

}  // namespace cedar
