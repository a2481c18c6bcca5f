// Liveness of 'running' runs and reopening a failed run from its checkpoint.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "results/statement.h"
#include "results/store.h"

namespace cedar {

std::string this_host() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

namespace {

bool process_alive(int64_t pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

int ResultStore::mark_stale_runs(double stale_seconds) {
  flush();
  struct Running {
    int64_t id, pid;
    std::string host;
    double heartbeat;
    bool has_pid;
  };
  std::vector<Running> running;
  {
    Statement st(db_, path_, "SELECT id, pid, host, heartbeat FROM runs WHERE status='running'");
    while (st.next())
      running.push_back({st.int_column(0), st.int_column(1), st.text_column(2), st.real_column(3),
                         !st.null_column(1)});
  }
  const std::string host = this_host();
  const double now = unix_now();
  int marked = 0;
  for (const Running& r : running) {
    std::string reason;
    if (r.has_pid && r.host == host && !process_alive(r.pid))
      reason = "stale: its process " + std::to_string(r.pid) + " on " + host + " is gone";
    else if (r.host != host && r.heartbeat > 0 && now - r.heartbeat > stale_seconds)
      reason = "stale: no heartbeat from " + r.host + " for " +
               std::to_string(static_cast<int64_t>(now - r.heartbeat)) + " s";
    if (reason.empty()) continue;
    Statement up(
        db_, path_,
        "UPDATE runs SET status='failed', error=?, end_time=? WHERE id=? AND status='running'");
    up.bind(1, reason).bind(2, utc_now_iso()).bind(3, r.id);
    up.run();
    marked += sqlite3_changes(db_) > 0 ? 1 : 0;
  }
  return marked;
}

int64_t ResultStore::find_resumable(const std::string& config_hash) {
  flush();
  Statement st(db_, path_,
               "SELECT id, status FROM runs WHERE config_hash=? ORDER BY id DESC LIMIT 1");
  st.bind(1, config_hash);
  if (!st.next()) return 0;
  return st.text_column(1) == "failed" ? st.int_column(0) : 0;
}

bool ResultStore::try_claim(const std::string& config_hash) {
  flush();
  // A claim from another host cannot be checked by pid: it holds while its run is 'running'
  // (with a fresh heartbeat, see mark_stale_runs) or for the first minutes, before the run's
  // record exists.
  constexpr double kOtherHostStartSeconds = 600;
  mark_stale_runs();
  bool run_live = false;
  {
    Statement st(db_, path_, "SELECT COUNT(*) FROM runs WHERE config_hash=? AND status='running'");
    st.bind(1, config_hash);
    run_live = st.next() && st.int_column(0) > 0;
  }
  const std::string host = this_host();
  const int64_t pid = ::getpid();
  begin();
  try {
    Statement st(db_, path_, "SELECT host, pid, claimed FROM claims WHERE config_hash=?");
    st.bind(1, config_hash);
    if (st.next()) {
      const std::string h = st.text_column(0);
      const int64_t p = st.int_column(1);
      const bool mine = h == host && p == pid;
      const bool live = h == host
                            ? process_alive(p)
                            : run_live || unix_now() - st.real_column(2) < kOtherHostStartSeconds;
      if (!mine && live) {
        exec("ROLLBACK");
        return false;
      }
    }
    Statement put(db_, path_, "INSERT OR REPLACE INTO claims VALUES (?,?,?,?)");
    put.bind(1, config_hash).bind(2, host).bind(3, pid).bind(4, unix_now());
    put.run();
    commit();
    return true;
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

void ResultStore::release_claim(const std::string& config_hash) {
  Statement st(db_, path_, "DELETE FROM claims WHERE config_hash=? AND host=? AND pid=?");
  st.bind(1, config_hash).bind(2, this_host()).bind(3, static_cast<int64_t>(::getpid()));
  st.run();
}

std::string ResultStore::run_uuid(int64_t run_id) {
  flush();
  Statement st(db_, path_, "SELECT uuid FROM runs WHERE id=?");
  st.bind(1, run_id);
  if (!st.next())
    throw StoreError("results database " + path_ + ": no run " + std::to_string(run_id));
  return st.text_column(0);
}

void ResultStore::reopen_run(int64_t run_id, int64_t step) {
  flush();
  begin();
  try {
    delete_rows_from_step(db_, path_, run_id, step);
    Statement up(db_, path_,
                 "UPDATE runs SET status='running', error=NULL, end_time=NULL, host=?, pid=?, "
                 "heartbeat=?, attempt=attempt+1 WHERE id=? AND status='failed'");
    up.bind(1, this_host())
        .bind(2, static_cast<int64_t>(::getpid()))
        .bind(3, unix_now())
        .bind(4, run_id);
    up.run();
    if (sqlite3_changes(db_) != 1)
      throw StoreError("results database " + path_ + ": run " + std::to_string(run_id) +
                       " is not a failed run and cannot be resumed");
    commit();
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

}  // namespace cedar
