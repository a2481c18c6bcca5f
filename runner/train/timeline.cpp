#include "runner/train/timeline.h"

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "platform/atomic_file.h"

namespace cedar {

double trace_clock_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string timeline_path(const std::string& path, int rank, int world) {
  if (world <= 1) return path;
  const std::filesystem::path p(path);
  const std::string suffix = ".rank" + std::to_string(rank);
  if (!p.has_extension()) return path + suffix;
  return (p.parent_path() / (p.stem().string() + suffix + p.extension().string())).string();
}

Timeline::Timeline(std::string path, StepRange steps, int rank)
    : path_(std::move(path)), steps_(steps), rank_(rank) {}

TimelineEvent& Timeline::add(int64_t step, const char* category, std::string name, double start_us,
                             double end_us, int thread) {
  TimelineEvent e;
  e.name = std::move(name);
  e.category = category;
  e.start_us = start_us;
  e.duration_us = end_us > start_us ? end_us - start_us : 0;
  e.rank = rank_;
  e.thread = thread;
  e.step = step;
  events_.push_back(std::move(e));
  return events_.back();
}

void Timeline::step_done(int64_t step) {
  if (step == steps_.last) write();
}

void Timeline::write() const {
  write_file_atomically(path_, timeline_json(events_));
  written_ = true;
}

std::string timeline_json(const std::vector<TimelineEvent>& events) {
  nlohmann::json list = nlohmann::json::array();
  std::set<std::pair<int, int>> threads;
  for (const TimelineEvent& e : events) {
    nlohmann::json args = {{"step", e.step}};
    if (e.bucket >= 0) args["bucket"] = e.bucket;
    if (e.elements >= 0) args["elements"] = e.elements;
    if (e.slice >= 0) args["slice"] = e.slice;
    if (e.priority >= 0) args["priority"] = e.priority;
    list.push_back({{"name", e.name},
                    {"cat", e.category},
                    {"ph", "X"},
                    {"ts", e.start_us},
                    {"dur", e.duration_us},
                    {"pid", e.rank},
                    {"tid", e.thread},
                    {"args", std::move(args)}});
    threads.insert({e.rank, e.thread});
  }
  // Names shown for each rank's process and its threads.
  std::set<int> ranks;
  for (const auto& [rank, thread] : threads) {
    if (ranks.insert(rank).second)
      list.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
    list.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", rank},
                    {"tid", thread},
                    {"args", {{"name", thread == kTraceMainThread ? "training" : "exchange"}}}});
  }
  const nlohmann::json doc = {{"traceEvents", std::move(list)}, {"displayTimeUnit", "ms"}};
  return doc.dump(1) + "\n";
}

}  // namespace cedar
