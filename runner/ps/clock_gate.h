#pragma once
// Stale synchronous parallel (Ho et al., NIPS 2013): the clock of a worker is the number of its
// gradients the server has applied. A worker at clock c may start computing its next gradient
// only while the slowest worker still taking part is at clock c - s or later (s = the bound);
// otherwise its pull reply waits. Without a bound (asp) nobody waits.
#include <cstdint>
#include <vector>

namespace cedar {

class ClockGate {
 public:
  // bound < 0: no bound (asp).
  ClockGate(int workers, int64_t bound)
      : clocks_(workers, 0), active_(workers, true), bound_(bound) {}
  void applied(int worker) { ++clocks_[worker]; }
  // The worker left the run: it no longer holds the others back.
  void leave(int worker) { active_[worker] = false; }
  int64_t clock(int worker) const { return clocks_[worker]; }
  // The clock of the slowest worker still taking part (that of `worker` when it is the last).
  int64_t slowest(int worker) const;
  // Whether `worker` (at its clock now) may start its next gradient.
  bool may_start(int worker) const {
    return bound_ < 0 || slowest(worker) >= clocks_[worker] - bound_;
  }

 private:
  std::vector<int64_t> clocks_;
  std::vector<bool> active_;
  int64_t bound_;
};

}  // namespace cedar
