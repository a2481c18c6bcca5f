// Verdicts of claims on the measured runs: findings tested over seeds, accounting checked on
// totals (the rules are stated in reports/claims.h).
#include <algorithm>
#include <cmath>
#include <utility>

#include "comm/network_model.h"
#include "reports/byte_ratios.h"
#include "reports/claims.h"
#include "reports/confidence_interval.h"

namespace cedar {
namespace {

// One arm's values, seed by seed.
using Samples = std::vector<std::pair<int64_t, double>>;

bool is_time(const std::string& metric) {
  return metric == "wall_speedup" || metric == "modeled_speedup" || metric == "step_speedup";
}
// Full-batch runs (reports/gap_rounds.h): the baseline's rounds to the gap ÷ the run's, paired by
// seed (a seed fixes the data set in both arms).
bool is_rounds(const std::string& metric) { return metric == "gap_rounds_ratio"; }

const ComparisonRow* find_row(const std::vector<ComparisonRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name && r.completed > 0) return &r;
  return nullptr;
}

int profile_index(const std::string& profile) {
  const auto& profiles = network_profiles();
  for (size_t p = 0; p < profiles.size(); ++p)
    if (profiles[p].name == profile) return static_cast<int>(p);
  return -1;
}

double byte_ratio(const std::string& metric, const WindowBytes& w, int world) {
  return metric == "payload_compression" ? payload_compression(w.dense_payload, w.payload_per_rank)
                                         : wire_ratio(w.dense_payload, w.bus, world);
}

// The byte ratio of `run` (row r) per seed: its own runs', or over the claim's window.
Samples byte_ratios(const Claim& c, const std::string& run, const ComparisonRow& r,
                    const WindowReader& windows) {
  Samples out;
  if (c.window.whole_run()) {
    for (const auto& s : r.seed_runs)
      out.emplace_back(s.seed,
                       c.metric == "payload_compression" ? s.payload_compression : s.wire_ratio);
  } else if (windows) {
    for (const auto& w : windows(run, c.window))
      out.emplace_back(w.seed, byte_ratio(c.metric, w, static_cast<int>(r.world_size)));
  }
  return out;
}

// Values of the metric seed by seed: accuracy in points; ratios and times as logarithms (nullopt
// where one is not positive: nothing was sent, or no time was recorded).
std::optional<Samples> samples(const Claim& c, const std::string& run, const ComparisonRow& r,
                               const WindowReader& windows) {
  Samples out;
  if (is_byte_metric(c.metric)) {
    out = byte_ratios(c, run, r, windows);
  } else {
    const int p = profile_index(c.profile);
    for (const auto& s : r.seed_runs) {
      double v =
          is_rounds(c.metric)           ? s.rounds_to_gap
          : c.metric == "final_gap"     ? s.final_gap  // NaN: none recorded
          : c.metric == "best_accuracy" ? 100 * s.best_accuracy
          : c.metric == "wall_speedup"  ? s.wall_seconds
          : c.metric == "step_speedup"  ? s.median_step_seconds
          : c.metric == "modeled_speedup"
              ? (p >= 0 && p < static_cast<int>(s.modeled_seconds.size()) ? s.modeled_seconds[p]
                                                                          : 0)
              : 100 * s.final_accuracy;
      out.emplace_back(s.seed, v);
    }
  }
  for (const auto& [seed, v] : out)
    if (std::isnan(v)) return std::nullopt;
  if (is_byte_metric(c.metric) || is_time(c.metric) || is_rounds(c.metric))
    for (auto& [seed, v] : out) {
      if (!(v > 0)) return std::nullopt;
      v = std::log(v);
    }
  if (out.empty()) return std::nullopt;
  return out;
}

std::vector<double> values(const Samples& s) {
  std::vector<double> v;
  for (const auto& [seed, x] : s) v.push_back(x);
  return v;
}
double mean(const Samples& s) {
  double sum = 0;
  for (const auto& [seed, x] : s) sum += x;
  return sum / static_cast<double>(s.size());
}

// The same seeds, each once, in both arms: then they pair.
bool same_seeds(Samples a, Samples b) {
  auto seeds = [](Samples& s) {
    std::vector<int64_t> out;
    for (const auto& [seed, x] : s) out.push_back(seed);
    std::sort(out.begin(), out.end());
    return out;
  };
  auto sa = seeds(a), sb = seeds(b);
  return sa == sb && std::adjacent_find(sa.begin(), sa.end()) == sa.end();
}

// The interval of mean a − mean b: paired where `pair` allows and the seeds are the same
// (`paired` says so), Welch's otherwise.
std::optional<Interval> two_arms(Samples a, Samples b, bool pair, bool* paired) {
  *paired = pair && same_seeds(a, b);
  if (!*paired) return welch_interval(values(a), values(b));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return paired_interval(values(a), values(b));
}

// The finding's test: `a` alone (one sample) or `a` − `b` (two arms), on the log scale for
// ratios. Fills measured, the interval and the verdict.
void test_finding(ClaimVerdict& v, Samples a, const std::optional<Samples>& b, bool pair) {
  const Claim& c = v.claim;
  v.ratio = is_byte_metric(c.metric) || is_time(c.metric) || is_rounds(c.metric);
  auto back = [&](double x) { return v.ratio ? std::exp(x) : x; };
  v.measured = back(b ? mean(a) - mean(*b) : mean(a));
  if (static_cast<int>(a.size()) < kMinSeeds || (b && static_cast<int>(b->size()) < kMinSeeds)) {
    v.verdict = "insufficient seeds";
    return;
  }
  std::optional<Interval> ci = b ? two_arms(a, *b, pair, &v.paired) : mean_interval(values(a));
  v.low = back(ci->low);
  v.high = back(ci->high);
  v.margin = back(ci->half_width);
  const bool inside =
      (!c.at_least || *v.low >= *c.at_least) && (!c.at_most || *v.high <= *c.at_most);
  const bool outside = (c.at_least && *v.high < *c.at_least) || (c.at_most && *v.low > *c.at_most);
  v.verdict = inside ? "reproduced" : outside ? "not reproduced" : "inconclusive";
}

// Can the seeds tell the method from its negative control? The interval of method − control in
// the metric's own terms (accuracy points; log-ratios for ratios, where a speed-up's control
// time is divided by the method's): containing 0, the two are not separated.
void test_control(ClaimVerdict& v, const Samples& run, const std::vector<ComparisonRow>& rows,
                  const WindowReader& windows) {
  const Claim& c = v.claim;
  const ComparisonRow* k = find_row(rows, c.control);
  auto control = k ? samples(c, c.control, *k, windows) : std::nullopt;
  if (!control) {
    v.control_verdict = "not enough runs";
    return;
  }
  if (static_cast<int>(run.size()) < kMinSeeds || static_cast<int>(control->size()) < kMinSeeds) {
    v.control_verdict = "insufficient seeds";
    return;
  }
  bool paired = false;
  const bool time = is_time(c.metric);
  auto ci = time ? two_arms(*control, run, false, &paired) : two_arms(run, *control, true, &paired);
  const bool ratio = time || is_byte_metric(c.metric);
  v.control_low = ratio ? std::exp(ci->low) : ci->low;
  v.control_high = ratio ? std::exp(ci->high) : ci->high;
  v.control_verdict = ci->low > 0 || ci->high < 0 ? "separated" : "not separated";
}

// An accounting check's ratio of byte totals (all seeds together); nullopt where unmeasured.
std::optional<double> byte_total(const Claim& c, const std::string& run, const ComparisonRow& r,
                                 const WindowReader& windows) {
  if (c.window.whole_run())
    return c.metric == "payload_compression" ? r.payload_compression : r.wire_ratio;
  if (!windows) return std::nullopt;
  WindowBytes sum;
  for (const auto& w : windows(run, c.window)) {
    sum.payload_per_rank += w.payload_per_rank;
    sum.bus += w.bus;
    sum.dense_payload += w.dense_payload;
    sum.steps += w.steps;
  }
  if (sum.steps == 0) return std::nullopt;
  return byte_ratio(c.metric, sum, static_cast<int>(r.world_size));
}

// A construction's fixed point (final_gap): every seed must lie in the claimed region; the value
// shown is the seed nearest the violated or the nearer bound (the smallest under at_least, the
// largest under at_most).
void check_construction(ClaimVerdict& v, const ComparisonRow& r, const WindowReader& windows) {
  const Claim& c = v.claim;
  auto run = samples(c, c.run, r, windows);
  if (!run) return;
  bool ok = true;
  std::optional<double> worst;
  for (const auto& [seed, x] : *run) {
    ok = ok && (!c.at_least || x >= *c.at_least) && (!c.at_most || x <= *c.at_most);
    if (!worst || (c.at_least ? x < *worst : x > *worst)) worst = x;
  }
  v.measured = worst;
  v.seeds = static_cast<int>(run->size());
  v.verdict = ok ? "holds" : "does not hold";
}

void check_accounting(ClaimVerdict& v, const ComparisonRow& r, const ComparisonRow* base,
                      const WindowReader& windows) {
  const Claim& c = v.claim;
  if (!is_byte_metric(c.metric)) return check_construction(v, r, windows);
  v.measured = byte_total(c, c.run, r, windows);
  // Against a named baseline: the run's ratio over the baseline's (both against dense).
  if (v.measured && base) {
    auto b = byte_total(c, c.baseline, *base, windows);
    v.measured = b && *b > 0 ? std::optional<double>(*v.measured / *b) : std::nullopt;
  }
  if (!v.measured) return;
  const bool ok =
      (!c.at_least || *v.measured >= *c.at_least) && (!c.at_most || *v.measured <= *c.at_most);
  v.verdict = ok ? "holds" : "does not hold";
}

}  // namespace

std::vector<ClaimVerdict> evaluate_claims(const std::vector<Claim>& claims,
                                          const std::vector<ComparisonRow>& rows,
                                          const WindowReader& windows) {
  std::vector<ClaimVerdict> out;
  for (const auto& c : claims) {
    ClaimVerdict v;
    v.claim = c;
    v.verdict = "not enough runs";
    const ComparisonRow* r = find_row(rows, c.run);
    const bool needs_base = c.metric == "accuracy_gap" || is_time(c.metric) ||
                            is_rounds(c.metric) ||
                            (is_byte_metric(c.metric) && !c.baseline.empty());
    const ComparisonRow* base = nullptr;
    if (r && needs_base)
      base = c.baseline.empty() ? dense_baseline_row(rows, *r) : find_row(rows, c.baseline);
    if (r) v.seeds = r->completed;
    if (base) v.baseline_seeds = base->completed;
    if (!r || (needs_base && !base)) {
      out.push_back(v);
      continue;
    }
    if (c.kind == "accounting") {
      check_accounting(v, *r, base, windows);
      out.push_back(v);
      continue;
    }
    auto run = samples(c, c.run, *r, windows);
    std::optional<Samples> other;
    if (base) other = samples(c, base->name, *base, windows);
    if (run && (!base || other)) {
      v.seeds = static_cast<int>(run->size());
      if (other) v.baseline_seeds = static_cast<int>(other->size());
      // A speed-up is baseline time ÷ run time; times never pair (reports/claims.h).
      if (is_time(c.metric))
        test_finding(v, *other, run, false);
      else if (is_rounds(c.metric))
        test_finding(v, *other, run, true);
      else
        test_finding(v, *run, other, true);
      if (!c.control.empty()) {
        test_control(v, *run, rows, windows);
        // The seeds cannot tell the method from a method that should do worse: the test could not
        // have failed it, so it is no reproduction.
        if (v.verdict == "reproduced" && v.control_verdict == "not separated")
          v.verdict = "not discriminating";
      }
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace cedar
