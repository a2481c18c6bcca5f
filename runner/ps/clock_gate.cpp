#include "runner/ps/clock_gate.h"

#include <algorithm>

namespace cedar {

int64_t ClockGate::slowest(int worker) const {
  int64_t low = clocks_[worker];
  for (size_t w = 0; w < clocks_.size(); ++w)
    if (active_[w]) low = std::min(low, clocks_[w]);
  return low;
}

}  // namespace cedar
