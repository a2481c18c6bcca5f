#include "reports/claims.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "comm/network_model.h"
#include "config/params.h"
#include "reports/byte_ratios.h"

namespace cedar {

const std::vector<std::string> kClaimMetrics = {
    "accuracy",   "accuracy_gap", "best_accuracy", "payload_compression",
    "wire_ratio", "compression",  "wall_speedup",  "modeled_speedup"};

namespace {

struct ClaimParams {
  std::string text, source, setting, reduced, run, baseline, metric, profile = "1gbe";
  double at_least = 0, at_most = 0, seed_tolerance = 0;
  template <class V>
  void visit(V& v) {
    v("text", text, "the claim in words");
    v("source", source, "paper and table");
    v("setting", setting, "the paper's setting: model, data, workers, epochs");
    v("reduced", reduced, "what this suite checks it on, where smaller than the paper's setting");
    v("run", run, "run name in the suite");
    v("baseline", baseline,
      "run compared against (default: dense SGD of the same model, data, ranks)");
    v("metric", metric, "what is measured", one_of(kClaimMetrics));
    v("profile", profile, "network profile (modeled_speedup)", one_of(network_profile_names()));
    v("at_least", at_least, "lower bound on the metric");
    v("at_most", at_most, "upper bound on the metric");
    v("seed_tolerance", seed_tolerance,
      "accuracy metrics: widen the bounds by this many seed spreads", cedar::at_least(0));
  }
};

struct WindowParams {
  int64_t from_step = 0, from_epoch = -1;
  bool last_epoch = false;
  template <class V>
  void visit(V& v) {
    v("from_step", from_step, "bytes from this step on (steps numbered from 0)", at_least(0));
    v("from_epoch", from_epoch, "bytes from this epoch on (epochs numbered from 0)", at_least(0));
    v("last_epoch", last_epoch, "bytes of the last epoch only");
  }
};

bool is_accuracy(const std::string& metric) {
  return metric == "accuracy" || metric == "accuracy_gap" || metric == "best_accuracy";
}
bool is_bytes(const std::string& metric) {
  return metric == "payload_compression" || metric == "wire_ratio";
}

const ComparisonRow* find_row(const std::vector<ComparisonRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name && r.completed > 0) return &r;
  return nullptr;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The metric of `r` against `base` (nullptr where the metric needs none); nullopt where it
// cannot be measured.
std::optional<double> measure(const Claim& c, const ComparisonRow& r, const ComparisonRow* base,
                              const WindowReader& windows) {
  if (c.metric == "accuracy") return 100 * r.final_mean;
  if (c.metric == "best_accuracy") return 100 * r.best_mean;
  if (c.metric == "accuracy_gap") return 100 * (r.final_mean - base->final_mean);
  if (is_bytes(c.metric) && !c.window.whole_run()) {
    if (!windows) return std::nullopt;
    auto w = windows(c.run, c.window);
    if (!w || w->steps == 0) return std::nullopt;
    return c.metric == "payload_compression"
               ? payload_compression(w->dense_payload, w->payload_per_rank)
               : wire_ratio(w->dense_payload, w->bus, static_cast<int>(r.world_size));
  }
  if (c.metric == "payload_compression") return r.payload_compression;
  if (c.metric == "wire_ratio") return r.wire_ratio;
  if (c.metric == "wall_speedup" && r.wall_mean > 0) return base->wall_mean / r.wall_mean;
  if (c.metric == "modeled_speedup" && modeled_seconds_on(r, c.profile) > 0)
    return modeled_seconds_on(*base, c.profile) / modeled_seconds_on(r, c.profile);
  return std::nullopt;
}

// The seed spread of an accuracy metric in points: the run's standard deviation, and for a gap
// that of the difference of two independent means' samples.
double seed_spread(const Claim& c, const ComparisonRow& r, const ComparisonRow* base) {
  if (c.metric == "accuracy_gap") return 100 * std::hypot(r.final_std, base->final_std);
  return 100 * r.final_std;
}

}  // namespace

std::string ClaimWindow::describe() const {
  if (last_epoch) return "last epoch";
  if (from_epoch >= 0) return "epochs ≥ " + std::to_string(from_epoch);
  if (from_step > 0) return "steps ≥ " + std::to_string(from_step);
  return "";
}

std::vector<Claim> load_claims(const std::string& path) {
  YAML::Node root = YAML::LoadFile(path);
  YAML::Node list = root["claims"];
  std::vector<Claim> claims;
  if (!list.IsDefined() || list.IsNull()) return claims;
  Source src{path, {}};
  if (!list.IsSequence())
    throw ConfigError(where(src, "claims", list) + ": claims: expected a list");
  for (const auto& item : list) {
    ClaimParams p;
    load_params(p, item, src, "claims[]", {"window"});
    if (p.run.empty() || p.metric.empty())
      throw ConfigError(where(src, "claims", item) + ": claims[]: 'run' and 'metric' are required");
    // `compression` is the accepted older name of payload compression.
    const std::string metric = p.metric == "compression" ? "payload_compression" : p.metric;
    Claim c;
    c.text = p.text;
    c.source = p.source;
    c.run = p.run;
    c.metric = metric;
    c.profile = p.profile;
    c.setting = p.setting;
    c.reduced = p.reduced;
    c.baseline = p.baseline;
    c.seed_tolerance = p.seed_tolerance;
    if (item["at_least"]) c.at_least = p.at_least;
    if (item["at_most"]) c.at_most = p.at_most;
    if (!c.at_least && !c.at_most)
      throw ConfigError(where(src, "claims", item) + ": claims[]: give at_least and/or at_most");
    if (item["seed_tolerance"] && !is_accuracy(metric))
      throw ConfigError(where(src, "claims[].seed_tolerance", item["seed_tolerance"]) +
                        ": claims[].seed_tolerance: only accuracy metrics vary with the seed; '" +
                        metric + "' does not take it");
    if (YAML::Node w = item["window"]) {
      if (!is_bytes(metric))
        throw ConfigError(where(src, "claims[].window", w) +
                          ": claims[].window: only byte metrics (payload_compression, wire_ratio) "
                          "take a window; '" +
                          metric + "' does not");
      WindowParams wp;
      load_params(wp, w, src, "claims[].window");
      const int given =
          (w["from_step"] ? 1 : 0) + (w["from_epoch"] ? 1 : 0) + (w["last_epoch"] ? 1 : 0);
      if (given != 1)
        throw ConfigError(
            where(src, "claims[].window", w) +
            ": claims[].window: give exactly one of from_step, from_epoch, last_epoch");
      c.window = {wp.from_step, wp.from_epoch, wp.last_epoch};
    }
    claims.push_back(c);
  }
  return claims;
}

std::vector<ClaimVerdict> evaluate_claims(const std::vector<Claim>& claims,
                                          const std::vector<ComparisonRow>& rows,
                                          const WindowReader& windows) {
  std::vector<ClaimVerdict> out;
  for (const auto& c : claims) {
    ClaimVerdict v;
    v.claim = c;
    v.verdict = "not enough runs";
    const ComparisonRow* r = find_row(rows, c.run);
    const bool needs_base = c.metric == "accuracy_gap" || c.metric == "wall_speedup" ||
                            c.metric == "modeled_speedup" ||
                            (is_bytes(c.metric) && !c.baseline.empty());
    const ComparisonRow* base = nullptr;
    if (r) base = c.baseline.empty() ? dense_baseline_row(rows, *r) : find_row(rows, c.baseline);
    if (r) v.seeds = r->completed;
    if (base && needs_base) v.baseline_seeds = base->completed;
    if (r && (base || !needs_base)) {
      v.measured = measure(c, *r, needs_base ? base : nullptr, windows);
      // Bytes against a named baseline: the run's ratio over the baseline's (both against dense).
      if (v.measured && is_bytes(c.metric) && !c.baseline.empty()) {
        Claim b = c;
        b.run = c.baseline;
        auto base_ratio = measure(b, *base, nullptr, windows);
        v.measured = base_ratio && *base_ratio > 0
                         ? std::optional<double>(*v.measured / *base_ratio)
                         : std::nullopt;
      }
      const double widen = is_accuracy(c.metric) ? c.seed_tolerance * seed_spread(c, *r, base) : 0;
      if (c.at_least) v.applied_at_least = *c.at_least - widen;
      if (c.at_most) v.applied_at_most = *c.at_most + widen;
      if (v.measured) {
        bool ok = (!v.applied_at_least || *v.measured >= *v.applied_at_least) &&
                  (!v.applied_at_most || *v.measured <= *v.applied_at_most);
        v.verdict = ok ? "reproduced" : "not reproduced";
      }
    }
    out.push_back(v);
  }
  return out;
}

std::string render_claims_markdown(const std::vector<ClaimVerdict>& verdicts) {
  std::ostringstream s;
  s << "| claim | source | paper's setting | checked on | run | metric | claimed | measured | "
       "seeds | "
       "verdict |\n";
  s << "|---|---|---|---|---|---|---|---:|---|---|\n";
  for (const auto& v : verdicts) {
    const Claim& c = v.claim;
    std::string claimed;
    auto bound = [&](const char* sign, double stated, const std::optional<double>& applied) {
      std::string b = std::string(sign) + " " + num(stated);
      if (applied && std::fabs(*applied - stated) > 1e-12)
        b += " (" + num(*applied) + " with " + num(c.seed_tolerance) + "× seed spread)";
      return b;
    };
    if (c.at_least) claimed += bound("≥", *c.at_least, v.applied_at_least);
    if (c.at_most)
      claimed += (claimed.empty() ? "" : ", ") + bound("≤", *c.at_most, v.applied_at_most);
    std::string metric = c.metric;
    if (metric == "modeled_speedup") metric += " (" + c.profile + ")";
    if (!c.window.whole_run()) metric += ", " + c.window.describe();
    std::string run = c.run;
    if (!c.baseline.empty()) run += " vs " + c.baseline;
    const std::string checked = !c.reduced.empty()   ? "reduced scale: " + c.reduced
                                : !c.setting.empty() ? "the paper's setting"
                                                     : "–";
    std::string seeds = v.seeds ? std::to_string(v.seeds) : "–";
    if (v.baseline_seeds) seeds += " vs " + std::to_string(v.baseline_seeds);
    std::string verdict = v.verdict;
    const bool single = v.seeds == 1 || v.baseline_seeds == 1;
    if (v.measured && is_accuracy(c.metric) && single) verdict += ", single seed";
    if (v.measured && !c.reduced.empty()) verdict += ", reduced scale";
    s << "| " << c.text << " | " << c.source << " | " << (c.setting.empty() ? "–" : c.setting)
      << " | " << checked << " | " << run << " | " << metric << " | " << claimed << " | "
      << (v.measured ? num(*v.measured) : "–") << " | " << seeds << " | " << verdict << " |\n";
  }
  return s.str();
}

}  // namespace cedar
