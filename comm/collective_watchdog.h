#pragma once
// A deadline for every blocking operation: a link that dies mid-collective (a NIC, a switch port)
// leaves TCP waiting for many minutes, and the ranks with it. Each operation is watched from its
// start to its end; one that outlives the limit is reported once, with what it was (the operation,
// its bytes, the peer), the step the run was in and the rank, to the `expired` action (the run's:
// mark the record failed, end the job). A link that went down between steps is caught by the next
// operation, whose deadline starts with it.
//
// The limit is per operation, not per step: a step's length grows with the model, the batch and
// the compute, while one operation's only with its bytes over the link, so one limit fits every
// run with room for an evaluation or a checkpoint between operations.
//
// One thread, asleep on a condition variable until the earliest deadline of the operations in
// flight (or, with none, until one starts); an operation's start wakes it only when it was idle,
// so a run of short operations costs a lock per start and end. No LibTorch.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cedar {

class CollectiveWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  // Called once, on the watchdog's thread, with e.g. "rank 1: allreduce of 246,824 bytes did not
  // complete within 5 s (step 12)". It may end the process; if it returns, the watchdog stops
  // watching.
  using Expired = std::function<void(const std::string& what)>;

  // limit_seconds > 0; `rank` names this process in the report.
  CollectiveWatchdog(double limit_seconds, int rank, Expired expired);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // The step the run is in (the row number of the steps table; -1: before the first step).
  void set_step(int64_t step) { step_.store(step, std::memory_order_relaxed); }
  double limit_seconds() const { return limit_; }
  // True once an operation outlived the limit (the report was made).
  bool expired() const { return fired_.load(); }

  // Watches one operation for as long as it lives: `op` (a string literal), the bytes this rank
  // hands to it, and the peer of a point-to-point message (-1: none, or any).
  class Watch {
   public:
    Watch(CollectiveWatchdog* dog, const char* op, int64_t bytes, int peer);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    CollectiveWatchdog* dog_;
    uint64_t id_ = 0;
  };

  // The report of an operation that ran out (exposed for tests of its wording).
  static std::string describe(int rank, const char* op, int64_t bytes, int peer, int64_t step,
                              double limit_seconds);

 private:
  struct InFlight {
    uint64_t id;
    Clock::time_point deadline;
    const char* op;
    int64_t bytes;
    int peer;
    int64_t step;
  };
  uint64_t begin(const char* op, int64_t bytes, int peer);
  void end(uint64_t id);
  void watch();

  const double limit_;
  const Clock::duration limit_duration_;
  const int rank_;
  Expired expired_;
  std::atomic<int64_t> step_{-1};
  std::atomic<bool> fired_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<InFlight> in_flight_;  // in start order: the first has the earliest deadline
  uint64_t next_id_ = 1;
  bool idle_ = false;  // the thread waits for an operation to start (no deadline)
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cedar
