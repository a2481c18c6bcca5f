// When does a method beat dense SGD on shaped links: measured over the rates, and predicted from
// the runs of one rate by reports/crossover.h (reports/link_validation.h).
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "reports/crossover.h"
#include "reports/link_validation.h"
#include "reports/projection.h"

namespace cedar {
namespace {

// The dense-SGD row at P = `world` and `rate` (nullptr: none); the one named "dense..." first.
const LinkValidationRow* dense_row(const LinkValidation& v, int world, const std::string& rate) {
  const LinkValidationRow* found = nullptr;
  for (const auto& r : v.rows) {
    if (r.algorithm != "dense" || r.world_size != world || r.links.rate != rate) continue;
    if (!found || (r.name.rfind("dense", 0) == 0 && found->name.rfind("dense", 0) != 0)) found = &r;
  }
  return found;
}

// The mean steps of the repeated runs of `name` at P = `world` and `rate`.
std::vector<double> mean_steps_of(const LinkValidation& v, const std::string& name, int world,
                                  const std::string& rate) {
  std::vector<double> out;
  for (const auto& r : v.rows)
    if (r.name == name && r.world_size == world && r.links.rate == rate && r.mean_step_seconds > 0)
      out.push_back(r.mean_step_seconds);
  return out;
}

double mean_of(const std::vector<double>& x) {
  double sum = 0;
  for (double value : x) sum += value;
  return x.empty() ? 0 : sum / double(x.size());
}

// Two or more runs on each side, and every run of one faster than every run of the other.
bool separated(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return true;  // no spread to judge by
  const auto [a_low, a_high] = std::minmax_element(a.begin(), a.end());
  const auto [b_low, b_high] = std::minmax_element(b.begin(), b.end());
  return *a_high < *b_low || *b_high < *a_low;
}

// The rates of the nearest points at or below `i` and at or above `i + 1` whose runs are apart
// and on the sides of the sign change between `i` and `i + 1` ("1gbit and 7gbit"); "" when either
// side has none.
template <typename Point>
std::string apart_around(const std::vector<Point>& points, size_t i) {
  const bool faster_below = points[i].difference < 0;
  std::string low, high;
  for (size_t j = i + 1; j-- > 0 && low.empty();)
    if (points[j].separated && (points[j].difference < 0) == faster_below) low = points[j].rate;
  for (size_t k = i + 1; k < points.size() && high.empty(); ++k)
    if (points[k].separated && (points[k].difference < 0) != faster_below) high = points[k].rate;
  return low.empty() || high.empty() ? "" : low + " and " + high;
}

// Measured: the step times of the run and of dense SGD at each rate both were measured at (each
// the mean over the runs repeated there); where the difference changes sign, interpolated
// linearly in 1/rate.
LinkCrossover::Verdict measured_verdict(const LinkValidation& v, const LinkValidationRow& first) {
  struct Point {
    double bits, difference;
    std::string rate;
    bool separated;
  };
  std::vector<Point> points;
  for (const auto& rate : v.rates) {
    const LinkValidationRow* dense = dense_row(v, first.world_size, rate);
    if (!dense) continue;
    const std::vector<double> dense_steps = mean_steps_of(v, dense->name, first.world_size, rate);
    const std::vector<double> run_steps = mean_steps_of(v, first.name, first.world_size, rate);
    if (dense_steps.empty() || run_steps.empty()) continue;
    points.push_back({dense->links.bits_per_second, mean_of(run_steps) - mean_of(dense_steps), rate,
                      separated(run_steps, dense_steps)});
  }
  LinkCrossover::Verdict out;
  if (points.empty()) return out;
  bool any_faster = false, any_slower = false;
  for (const auto& p : points) (p.difference < 0 ? any_faster : any_slower) = true;
  if (!any_slower) {
    out.wins = "always";
    return out;
  }
  if (!any_faster) {
    out.wins = "never";
    return out;
  }
  int crossings = 0;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const Point &a = points[i], &b = points[i + 1];
    if ((a.difference < 0) == (b.difference < 0)) continue;
    if (++crossings > 1) continue;
    // d(x) linear in x = 1/rate between the two points: d = 0 at x*.
    const double xa = 1 / a.bits, xb = 1 / b.bits;
    const double x = xa + (0 - a.difference) * (xb - xa) / (b.difference - a.difference);
    out.bits_per_second = 1 / x;
    out.wins = a.difference < 0 ? "below" : "above";
    out.between = a.rate + " and " + b.rate;
    out.within_spread = !a.separated || !b.separated;
    if (out.within_spread) out.resolved_between = apart_around(points, i);
  }
  out.several_crossings = crossings > 1;
  return out;
}

// Predicted from the runs at `rate` and P = `world`: reports/crossover.h on them, compute per
// step the mean after warm-up, α and the link's share of its rate from the profile of the dense
// run there.
std::map<std::string, LinkCrossover::Verdict> predicted_verdicts(const LinkValidation& v,
                                                                 const std::string& suite,
                                                                 const std::string& rate,
                                                                 int world) {
  std::map<std::string, LinkCrossover::Verdict> out;
  const LinkValidationRow* dense = dense_row(v, world, rate);
  if (!dense) return out;
  std::map<int64_t, const LinkValidationRow*> rows;
  for (const auto& r : v.rows)
    if (r.links.rate == rate && r.world_size == world && r.database == dense->database)
      rows[r.run_id] = &r;
  std::vector<RunMeasurement> runs;
  for (RunMeasurement& m : load_measurements(dense->database, suite)) {
    const auto it = rows.find(m.id);
    if (it == rows.end() || it->second->mean_step_seconds <= 0) continue;
    m.compute_seconds_per_step = it->second->mean_compute;
    runs.push_back(m);
  }
  const ProfileSource& profile = v.profiles[static_cast<size_t>(dense->profile)];
  const AlphaBeta allreduce = profile.profile.fit_for("allreduce", world);
  // Inside a host: the profile's fits at P = ranks per host where it has them, as the rows'
  // levels are costed.
  const NetworkProfile* intra =
      fitted_within_a_host(profile.profile, dense->links, dense->links.ranks_per_host)
          ? &profile.profile
          : nullptr;
  // The share of the rate the calibrated allreduce reached on this link.
  const double reached = 8 / (allreduce.beta * dense->links.bits_per_second);
  for (const CrossoverPoint& p : crossover(runs, {}, allreduce.alpha, {}, intra)) {
    if (!p.measured || !p.has_dense) continue;
    LinkCrossover::Verdict verdict;
    verdict.wins = p.wins;
    verdict.rate = rate;
    verdict.profile = dense->profile;
    verdict.fit_over_rate = reached;
    if (p.wins == "below" || p.wins == "above") {
      verdict.model_gbps = p.crossover_gbps;
      if (reached <= 1) verdict.bits_per_second = p.crossover_gbps * 1e9 / reached;
    }
    out[p.name] = verdict;
  }
  return out;
}

}  // namespace

std::vector<LinkCrossover> link_crossovers(const LinkValidation& v, const std::string& suite) {
  std::vector<LinkCrossover> out;
  std::set<std::pair<std::string, int>> done;
  for (const auto& r : v.rows) {
    // A parameter server's P - 1 workers have no dense run of the same workers to compare with.
    if (r.algorithm == "dense" || r.servers > 0) continue;
    if (!done.insert({r.name, r.world_size}).second) continue;
    LinkCrossover c;
    c.name = r.name;
    c.algorithm = r.algorithm;
    c.world_size = r.world_size;
    c.measured = measured_verdict(v, r);
    out.push_back(c);
  }
  std::set<int> worlds;
  for (const auto& c : out) worlds.insert(c.world_size);
  for (int world : worlds)
    for (const auto& rate : v.rates) {
      const auto verdicts = predicted_verdicts(v, suite, rate, world);
      for (auto& c : out) {
        if (c.world_size != world) continue;
        const auto it = verdicts.find(c.name);
        LinkCrossover::Verdict verdict =
            it != verdicts.end() ? it->second : LinkCrossover::Verdict{};
        verdict.rate = rate;
        c.predicted.push_back(verdict);
      }
    }
  return out;
}

}  // namespace cedar
