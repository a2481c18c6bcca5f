#include "runner/train/timeline_summary.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "runner/train/exchange_overlap.h"

namespace cedar {
namespace {

// Phases in the order a step runs them; categories a file adds beyond these follow.
const std::vector<std::string> kPhaseOrder = {
    kTraceStep,      kTraceForward,  kTraceBackward, kTraceGradients, kTraceReady,
    kTraceNegotiate, kTraceExchange, kTraceWait,     kTraceOptimizer, kTraceAfterStep};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<TimelineEvent> read_timeline(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open trace file");
  std::vector<TimelineEvent> events;
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
      throw std::runtime_error(path + ": not a Chrome trace (no \"traceEvents\" array)");
    for (const auto& j : doc["traceEvents"]) {
      if (j.value("ph", "") != "X") continue;
      TimelineEvent e;
      e.name = j.at("name").get<std::string>();
      e.category = j.value("cat", "");
      e.start_us = j.at("ts").get<double>();
      e.duration_us = j.value("dur", 0.0);
      e.rank = j.value("pid", 0);
      e.thread = j.value("tid", 0);
      const nlohmann::json args = j.value("args", nlohmann::json::object());
      e.step = args.value("step", int64_t{0});
      e.bucket = args.value("bucket", int64_t{-1});
      e.elements = args.value("elements", int64_t{-1});
      e.slice = args.value("slice", int64_t{-1});
      e.priority = args.value("priority", int64_t{-1});
      events.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a valid trace: " + e.what());
  }
  return events;
}

TimelineSummary summarize_timeline(const std::vector<TimelineEvent>& events) {
  TimelineSummary s;
  std::map<std::string, double> by_category;
  std::map<std::pair<int, int64_t>, std::pair<double, double>> backward;  // (rank, step) -> span
  std::set<int> ranks;
  for (const TimelineEvent& e : events) {
    by_category[e.category] += e.duration_us;
    ranks.insert(e.rank);
    if (e.category == kTraceBackward) backward[{e.rank, e.step}] = {e.start_us, e.end_us()};
  }
  std::map<std::pair<int, int64_t>, StepOverlap> steps;
  std::map<std::pair<int, int64_t>, std::vector<std::pair<double, std::pair<int64_t, int64_t>>>>
      slices;  // (rank, step) -> (start, (slice, priority))
  for (const TimelineEvent& e : events) {
    if (e.category == kTraceNegotiate) ++steps[{e.rank, e.step}].rounds;
    if (e.category == kTraceExchange && e.slice >= 0)
      slices[{e.rank, e.step}].push_back({e.start_us, {e.slice, e.priority}});
    if (e.category != kTraceStep && e.category != kTraceExchange) continue;
    StepOverlap& o = steps[{e.rank, e.step}];
    o.rank = e.rank;
    o.step = e.step;
    const auto b = backward.find({e.rank, e.step});
    if (b != backward.end()) o.backward_us = b->second.second - b->second.first;
    if (e.category != kTraceExchange) continue;
    // A step without a backward event hides nothing: an empty interval before the exchange.
    ExchangeOverlap x;
    if (b != backward.end())
      x.add(e.start_us, e.end_us(), b->second.first, b->second.second);
    else
      x.add(e.start_us, e.end_us(), e.start_us, e.start_us);
    o.exchange_us += x.exchange;
    o.hidden_us += x.hidden;
  }
  for (const std::string& phase : kPhaseOrder)
    if (const auto it = by_category.find(phase); it != by_category.end()) {
      s.phase_us.emplace_back(phase, it->second);
      by_category.erase(it);
    }
  for (const auto& [category, us] : by_category) s.phase_us.emplace_back(category, us);
  std::vector<double> shares;
  for (auto& [key, o] : steps) {
    o.rank = key.first;
    o.step = key.second;
    auto& wire = slices[key];
    std::sort(wire.begin(), wire.end());
    for (const auto& [start, slice] : wire) o.slices.push_back(slice);
    s.steps.push_back(o);
    if (o.exchange_us > 0) shares.push_back(o.hidden_share());
  }
  s.ranks = static_cast<int>(ranks.size());
  if (!shares.empty()) s.median_hidden_share = median(shares);
  return s;
}

std::string format_timeline_summary(const TimelineSummary& s) {
  std::string out;
  char line[256];
  const size_t n = s.steps.size();
  std::snprintf(line, sizeof line, "%d rank(s), %zu traced step(s) in all\n", s.ranks, n);
  out += line;
  std::snprintf(line, sizeof line, "%-12s %12s %12s\n", "phase", "total ms", "per step ms");
  out += line;
  for (const auto& [phase, us] : s.phase_us) {
    std::snprintf(line, sizeof line, "%-12s %12.3f %12.3f\n", phase.c_str(), us / 1e3,
                  n ? us / 1e3 / double(n) : 0.0);
    out += line;
  }
  if (s.median_hidden_share < 0) return out + "hidden exchange share: no exchange time\n";
  std::snprintf(line, sizeof line,
                "hidden exchange share (exchange time while backward ran / exchange time): "
                "median %.3f\n",
                s.median_hidden_share);
  out += line;
  for (const StepOverlap& o : s.steps) {
    std::snprintf(line, sizeof line,
                  "  rank %d step %lld: backward %.3f ms, exchange %.3f ms, hidden %.3f ms "
                  "(%.3f)\n",
                  o.rank, static_cast<long long>(o.step), o.backward_us / 1e3, o.exchange_us / 1e3,
                  o.hidden_us / 1e3, o.hidden_share());
    out += line;
  }
  for (const StepOverlap& o : s.steps) {
    if (o.slices.empty()) continue;
    std::snprintf(
        line, sizeof line, "  rank %d step %lld: %zu slices in %lld rounds, on the wire:", o.rank,
        static_cast<long long>(o.step), o.slices.size(), static_cast<long long>(o.rounds));
    out += line;
    for (const auto& [slice, priority] : o.slices) {
      std::snprintf(line, sizeof line, " %lld(p%lld)", static_cast<long long>(slice),
                    static_cast<long long>(priority));
      out += line;
    }
    out += "\n";
  }
  return out;
}

}  // namespace cedar
