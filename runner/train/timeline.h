#pragma once
// A timeline of chosen training steps (train.trace, train.trace_steps): complete events (name,
// category, start, duration, thread) of one rank, written as a Chrome trace, the JSON format
// Perfetto (ui.perfetto.dev) and chrome://tracing load:
//   {"traceEvents": [{"name", "cat", "ph": "X", "ts" (µs), "dur" (µs), "pid" (rank), "tid",
//                     "args": {"step", "bucket"?, "elements"?, "slice"?, "priority"?}}, ...],
//    "displayTimeUnit": "ms"}
// plus metadata events naming the process (rank) and threads. Times are the monotonic clock's
// (CLOCK_MONOTONIC), so the files of ranks on one host line up. Each rank writes its own file
// (timeline_path): gathering would add traffic to the run it observes. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

#include "config/step_range.h"

namespace cedar {

// Event categories: one step's phases, the umbrella "step" holding them.
inline constexpr const char* kTraceStep = "step";
inline constexpr const char* kTraceForward = "forward";
inline constexpr const char* kTraceBackward = "backward";
// With train.overlap: backward's stretch up to the moment a bucket's last gradient is ready.
inline constexpr const char* kTraceGradients = "gradients";
inline constexpr const char* kTraceExchange = "exchange";  // Algorithm::reduce_gradients, a bucket
inline constexpr const char* kTraceWait = "wait";  // overlap: backward done, exchanges not yet
inline constexpr const char* kTraceOptimizer = "optimizer";
inline constexpr const char* kTraceAfterStep = "after_step";  // Algorithm::after_step
// train.schedule: priority (runner/train/priority_schedule.h): the moment a slice's gradients are
// all in on this rank (no duration), and each round of the ranks' agreement on the next slice.
inline constexpr const char* kTraceReady = "ready";
inline constexpr const char* kTraceNegotiate = "negotiate";

// Threads: the training loop, and the exchange thread of train.overlap.
inline constexpr int kTraceMainThread = 0;
inline constexpr int kTraceExchangeThread = 1;

struct TimelineEvent {
  std::string name;
  std::string category;
  double start_us = 0, duration_us = 0;
  int rank = 0, thread = kTraceMainThread;
  int64_t step = 0;
  int64_t bucket = -1;    // exchange and gradients events (-1: none)
  int64_t elements = -1;  // exchange events: the bucket's (or slice's) gradient entries
  int64_t slice = -1;     // train.schedule: priority: the slice (negotiate: the one chosen)
  int64_t priority = -1;  // ... and its priority (0 first: model position of its first layer)
  double end_us() const { return start_us + duration_us; }
};

// Microseconds on the monotonic clock.
double trace_clock_us();

// `path` for `rank` of `world` ranks: the path itself on one rank, else with ".rankR" before its
// extension (t.json -> t.rank1.json; no extension: t -> t.rank1).
std::string timeline_path(const std::string& path, int rank, int world);

class Timeline {
 public:
  // Records the steps of `steps` on `rank` into `path` (already made rank-specific).
  Timeline(std::string path, StepRange steps, int rank);
  bool records(int64_t step) const { return steps_.contains(step); }
  // An event of `step` from `start_us` to `end_us` (trace_clock_us values).
  TimelineEvent& add(int64_t step, const char* category, std::string name, double start_us,
                     double end_us, int thread = kTraceMainThread);
  // After `step`: writes the file once the last step of the range is done.
  void step_done(int64_t step);
  // Writes the file (atomically) with the events so far; a second call rewrites it.
  void write() const;
  bool written() const { return written_; }
  const std::vector<TimelineEvent>& events() const { return events_; }

 private:
  std::string path_;
  StepRange steps_;
  int rank_;
  std::vector<TimelineEvent> events_;
  mutable bool written_ = false;
};

// The trace JSON of `events` (of one or several ranks).
std::string timeline_json(const std::vector<TimelineEvent>& events);

}  // namespace cedar
