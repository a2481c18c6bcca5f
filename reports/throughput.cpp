#include "reports/throughput.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <utility>

#include "reports/median.h"
#include "reports/run_config.h"

namespace cedar {

double training_images_per_second(const std::vector<StepTime>& steps,
                                  const std::vector<EvalTime>& evals, int64_t batch_size) {
  if (batch_size <= 0 || steps.empty()) return 0;
  std::map<int64_t, double> eval_end;  // steps completed -> when that evaluation ended
  for (const auto& e : evals) eval_end[e.step] = e.wall_seconds;
  std::map<int64_t, std::pair<double, double>> epochs;  // epoch -> (steps of a rank, seconds)
  double previous = 0;
  for (const auto& s : steps) {
    double from = previous;
    // An evaluation between the previous row and this one: the step began when it ended. One
    // that does not lie in the gap (rows of another origin) is not subtracted.
    auto e = eval_end.find(s.step);
    if (e != eval_end.end() && e->second >= previous && e->second <= s.wall_seconds)
      from = e->second;
    auto& [count, seconds] = epochs[s.epoch];
    count += s.share;
    seconds += std::max(0.0, s.wall_seconds - from);
    previous = s.wall_seconds;
  }
  std::vector<double> rates;
  for (const auto& [epoch, totals] : epochs)
    if (totals.second > 0) rates.push_back(double(batch_size) * totals.first / totals.second);
  return median_of(std::move(rates));
}

double median_step_seconds(const std::vector<StepTime>& steps, const std::vector<EvalTime>& evals,
                           int64_t from_step) {
  std::map<int64_t, double> eval_end;
  for (const auto& e : evals) eval_end[e.step] = e.wall_seconds;
  std::vector<double> seconds;
  for (size_t i = 1; i < steps.size(); ++i) {
    const StepTime& s = steps[i];
    if (s.step < std::max<int64_t>(1, from_step) || !(s.share > 0)) continue;
    double from = steps[i - 1].wall_seconds;
    auto e = eval_end.find(s.step);
    if (e != eval_end.end() && e->second >= from && e->second <= s.wall_seconds) from = e->second;
    seconds.push_back(std::max(0.0, s.wall_seconds - from) / s.share);
  }
  return median_of(std::move(seconds));
}

double median_step_seconds(ResultsReader& db, int64_t run_id, int64_t from_step) {
  return median_step_seconds(read_step_times(db, run_id), read_eval_times(db, run_id), from_step);
}

double training_images_per_second(ResultsReader& db, int64_t run_id, int64_t batch_size) {
  if (batch_size <= 0) return 0;
  return training_images_per_second(read_step_times(db, run_id), read_eval_times(db, run_id),
                                    batch_size);
}

int64_t batch_size_of(const std::string& config_yaml) {
  const std::optional<std::string> b = config_scalar(config_yaml, "train", "batch_size");
  if (!b) return 0;
  int64_t v = 0;
  const char* end = b->data() + b->size();
  const auto r = std::from_chars(b->data(), end, v);
  return r.ec == std::errc() && r.ptr == end ? std::max<int64_t>(0, v) : 0;
}

}  // namespace cedar
