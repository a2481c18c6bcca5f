#include "comm/collective_watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace cedar {
namespace {

// 246824 -> "246,824".
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return n < 0 ? "-" + digits : digits;
}

// "to rank 3", "from rank 3", "with rank 3" by the kind of point-to-point operation.
std::string peer_phrase(const char* op, int peer) {
  if (peer < 0) return std::strncmp(op, "recv", 4) == 0 ? " from any rank" : "";
  const char* prep = std::strcmp(op, "sendrecv") == 0   ? " with"
                     : std::strncmp(op, "recv", 4) == 0 ? " from"
                                                        : " to";
  return std::string(prep) + " rank " + std::to_string(peer);
}

}  // namespace

std::string CollectiveWatchdog::describe(int rank, const char* op, int64_t bytes, int peer,
                                         int64_t step, double limit_seconds) {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", limit_seconds);
  return "rank " + std::to_string(rank) + ": " + op + " of " + grouped(bytes) + " bytes" +
         peer_phrase(op, peer) + " did not complete within " + limit +
         " s (network.collective_timeout_s), " +
         (step >= 0 ? "in step " + std::to_string(step) : std::string("before the first step"));
}

CollectiveWatchdog::CollectiveWatchdog(double limit_seconds, int rank, Expired expired)
    : limit_(limit_seconds),
      limit_duration_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(limit_seconds))),
      rank_(rank),
      expired_(std::move(expired)),
      thread_([this] { watch(); }) {}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

uint64_t CollectiveWatchdog::begin(const char* op, int64_t bytes, int peer) {
  bool wake = false;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    in_flight_.push_back({id, Clock::now() + limit_duration_, op, bytes, peer,
                          step_.load(std::memory_order_relaxed)});
    wake = idle_;
    idle_ = false;
  }
  if (wake) wake_.notify_one();
  return id;
}

void CollectiveWatchdog::end(uint64_t id) {
  // No notification: the thread finds the operation gone when it wakes at its deadline.
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                         [id](const InFlight& f) { return f.id == id; });
  if (it != in_flight_.end()) in_flight_.erase(it);
}

void CollectiveWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (in_flight_.empty()) {
      idle_ = true;
      wake_.wait(lock, [this] { return stop_ || !in_flight_.empty(); });
      idle_ = false;
      continue;
    }
    const InFlight first = in_flight_.front();
    if (Clock::now() < first.deadline) {
      wake_.wait_until(lock, first.deadline, [this, &first] {
        return stop_ || in_flight_.empty() || in_flight_.front().id != first.id;
      });
      continue;
    }
    const std::string what = describe(rank_, first.op, first.bytes, first.peer, first.step, limit_);
    fired_ = true;
    lock.unlock();
    expired_(what);
    return;
  }
}

CollectiveWatchdog::Watch::Watch(CollectiveWatchdog* dog, const char* op, int64_t bytes, int peer)
    : dog_(dog) {
  if (dog_) id_ = dog_->begin(op, bytes, peer);
}

CollectiveWatchdog::Watch::~Watch() {
  if (dog_) dog_->end(id_);
}

}  // namespace cedar
