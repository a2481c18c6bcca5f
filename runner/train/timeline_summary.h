#pragma once
// What a timeline (runner/train/timeline.h) says: each phase's total time, and the hidden share
// of the exchange: per traced step of a rank, the part of its buckets' exchange time that ran
// while backward was still running, divided by that exchange time; then the median over the
// steps. 0 when every exchange starts after backward (train.overlap off); towards 1 when backward
// hides the communication. `cedar trace summary FILE...` prints it. No LibTorch here.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runner/train/timeline.h"

namespace cedar {

// The complete ("ph": "X") events of a trace file; throws std::runtime_error naming the file
// and what is wrong with it.
std::vector<TimelineEvent> read_timeline(const std::string& path);

struct StepOverlap {
  int rank = 0;
  int64_t step = 0;
  double backward_us = 0, exchange_us = 0, hidden_us = 0;
  // train.schedule: priority: the slices' exchanges in the order they started, each as (slice,
  // priority), and the rounds of negotiation (both empty / 0 for whole buckets).
  std::vector<std::pair<int64_t, int64_t>> slices;
  int64_t rounds = 0;
  double hidden_share() const { return exchange_us > 0 ? hidden_us / exchange_us : 0; }
};

struct TimelineSummary {
  std::vector<std::pair<std::string, double>> phase_us;  // category -> µs summed over the steps
  std::vector<StepOverlap> steps;                        // per (rank, step), in that order
  int ranks = 0;
  // Median over the steps whose exchange took time (-1: none did).
  double median_hidden_share = -1;
};

TimelineSummary summarize_timeline(const std::vector<TimelineEvent>& events);
// The summary as a table: phases with their total and per-step milliseconds, then the hidden
// share (median and per step), then, for sliced exchanges, each step's slices in wire order.
std::string format_timeline_summary(const TimelineSummary& summary);

}  // namespace cedar
