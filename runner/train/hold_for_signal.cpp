#include "runner/train/hold_for_signal.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "platform/atomic_file.h"
#include "runner/train/run_guard.h"

namespace cedar {

namespace {

// PREFIX.rank<R>, or "" without CEDAR_HOLD_FILE.
std::string hold_file(int rank) {
  const char* prefix = std::getenv("CEDAR_HOLD_FILE");
  return prefix ? std::string(prefix) + ".rank" + std::to_string(rank) : "";
}

}  // namespace

bool hold_requested_after(int64_t completed_steps, int rank) {
  static const int64_t at = [] {  // read once: this runs after every step
    const char* v = std::getenv("CEDAR_HOLD_AFTER_STEP");
    return v ? static_cast<int64_t>(std::strtoll(v, nullptr, 10)) : int64_t{-1};
  }();
  if (at < 0 || at != completed_steps) return false;
  const std::string path = hold_file(rank);
  return path.empty() || access(path.c_str(), F_OK) != 0;
}

void hold_for_signal(int rank) {
  const std::string path = hold_file(rank);
  if (!path.empty()) {
    // Readers see the whole pid or no file.
    write_file_atomically(path, std::to_string(::getpid()) + "\n");
  }
  while (stop_signal() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace cedar
