#include "runner/train/run_guard.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "results/store.h"

namespace cedar {
namespace {

constexpr auto kGrace = std::chrono::seconds(5);

std::atomic<int> g_signal{0};
std::mutex g_mu;
std::string g_db;
int64_t g_run = -1;

void watch(sigset_t set) {
  int sig = 0;
  if (sigwait(&set, &sig) != 0) return;
  g_signal = sig;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_run >= 0) {
      try {
        ResultStore::mark_failed(g_db, g_run,
                                 std::string("interrupted by SIG") + sigabbrev_np(sig));
      } catch (...) {
      }
    }
  }
  std::this_thread::sleep_for(kGrace);
  _exit(128 + sig);
}

}  // namespace

void install_signal_watch() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(watch, set).detach();
}

int stop_signal() { return g_signal.load(); }

void set_active_run(const std::string& db_path, int64_t run_id) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_db = db_path;
  g_run = run_id;
}

void clear_active_run() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_run = -1;
}

}  // namespace cedar
