#pragma once
// A range of training steps written as "FIRST-LAST" (both included) or "N" (one step), steps
// counted from 0 as in the results' steps table. No LibTorch here.
#include <cstdint>
#include <string>

namespace cedar {

struct StepRange {
  int64_t first = 0, last = 0;
  bool contains(int64_t step) const { return step >= first && step <= last; }
  int64_t size() const { return last - first + 1; }
};

// Parses "10-14" or "12"; throws std::invalid_argument saying what is wrong with `text`.
StepRange parse_step_range(const std::string& text);

}  // namespace cedar
