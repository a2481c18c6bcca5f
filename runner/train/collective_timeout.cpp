#include "runner/train/collective_timeout.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "comm/mpi_communicator.h"
#include "results/store.h"

namespace cedar {
namespace {

// The exit status of a job ended by the watchdog (`cedar run`'s for a run that did not complete).
constexpr int kExitStatus = 3;
// How long MPI_Abort may take before the process ends itself (the launcher may be unreachable
// over the very link that died).
constexpr auto kAbortGrace = std::chrono::seconds(10);

std::mutex g_mu;
std::string g_path;
int64_t g_run = -1;

void end_run(const std::string& what) {
  std::fprintf(stderr, "cedar: %s; ending the run\n", what.c_str());
  std::fflush(stderr);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_run >= 0) {
      try {
        ResultStore::mark_failed(g_path, g_run, what);
      } catch (...) {
      }
    }
  }
  std::thread([] {
    std::this_thread::sleep_for(kAbortGrace);
    std::_Exit(kExitStatus);
  }).detach();
  MpiCommunicator::abort_job(kExitStatus);
}

}  // namespace

std::unique_ptr<CollectiveWatchdog> make_run_watchdog(double limit_seconds, int rank) {
  if (limit_seconds <= 0) return nullptr;
  return std::make_unique<CollectiveWatchdog>(limit_seconds, rank, end_run);
}

void set_watched_run(const std::string& results_path, int64_t run_id) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_path = results_path;
  g_run = run_id;
}

void clear_watched_run() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_run = -1;
}

}  // namespace cedar
