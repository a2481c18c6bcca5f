#include "reports/throughput.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "reports/results_reader.h"
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
  if (rates.empty()) return 0;
  std::sort(rates.begin(), rates.end());
  const size_t n = rates.size();
  return n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
}

double training_images_per_second(ResultsReader& db, int64_t run_id, int64_t batch_size) {
  if (batch_size <= 0) return 0;
  std::vector<StepTime> steps;
  sqlite3_stmt* st = db.prepare(
      "SELECT s.step, s.epoch, s.wall_seconds, " CEDAR_STEP_SHARE
      " FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.run_id = ?1 ORDER BY s.step");
  sqlite3_bind_int64(st, 1, run_id);
  while (sqlite3_step(st) == SQLITE_ROW)
    steps.push_back({sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                     sqlite3_column_double(st, 2), sqlite3_column_double(st, 3)});
  sqlite3_finalize(st);
  std::vector<EvalTime> evals;
  st = db.prepare("SELECT step, wall_seconds FROM evals WHERE run_id = ?1");
  sqlite3_bind_int64(st, 1, run_id);
  while (sqlite3_step(st) == SQLITE_ROW)
    evals.push_back({sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1)});
  sqlite3_finalize(st);
  return training_images_per_second(steps, evals, batch_size);
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
