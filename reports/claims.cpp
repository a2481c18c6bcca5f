#include "reports/claims.h"

#include <yaml-cpp/yaml.h>

#include "comm/network_model.h"
#include "config/params.h"

namespace cedar {

const std::vector<std::string> kClaimMetrics = {
    "accuracy",        "accuracy_gap",     "best_accuracy", "payload_compression",
    "wire_ratio",      "compression",      "wall_speedup",  "step_speedup",
    "modeled_speedup", "gap_rounds_ratio", "final_gap"};

namespace {

struct ClaimParams {
  std::string text, source, setting, reduced, kind, run, baseline, control, metric,
      profile = "1gbe";
  double at_least = 0, at_most = 0;
  template <class V>
  void visit(V& v) {
    v("text", text, "the claim in words");
    v("source", source, "paper and table");
    v("setting", setting, "the paper's setting: model, data, workers, epochs");
    v("reduced", reduced, "what this suite checks it on, where smaller than the paper's setting");
    v("kind", kind,
      "required: accounting (bytes that follow from the format, byte metrics, or a fixed point "
      "that follows from the construction, final_gap) or finding",
      one_of({"accounting", "finding"}));
    v("run", run, "run name in the suite");
    v("baseline", baseline,
      "run compared against (default: dense SGD of the same model, data, ranks)");
    v("control", control, "findings: a negative-control run the method must be told apart from");
    v("metric", metric, "what is measured", one_of(kClaimMetrics));
    v("profile", profile, "network profile (modeled_speedup)", one_of(network_profile_names()));
    v("at_least", at_least, "lower bound on the metric");
    v("at_most", at_most, "upper bound on the metric");
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

// The key that widened a bound by the seeds' spread, gone: name it and say why.
const char* const kSeedToleranceRemoved =
    ": claims[].seed_tolerance was removed: it widened a claim's bounds by the seeds' spread, so a "
    "noisier result passed more easily. A finding is now tested on the 95% confidence interval of "
    "at least 3 seeds per arm (see reports/claims.h); delete the key";

}  // namespace

bool is_byte_metric(const std::string& metric) {
  return metric == "payload_compression" || metric == "wire_ratio";
}

std::string ClaimWindow::describe() const {
  if (last_epoch) return "last epoch";
  if (from_epoch >= 0) return "epochs ≥ " + std::to_string(from_epoch) + " (counted from 0)";
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
    if (item.IsMap() && item["seed_tolerance"])
      throw ConfigError(where(src, "claims[].seed_tolerance", item["seed_tolerance"]) +
                        kSeedToleranceRemoved);
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
    if (!item["kind"])
      throw ConfigError(where(src, "claims", item) +
                        ": claims[]: 'kind' is required: accounting (bytes that follow from the "
                        "format or construction) or finding (what training measures)");
    c.kind = p.kind;
    c.control = p.control;
    if (c.kind == "accounting" && !c.control.empty())
      throw ConfigError(where(src, "claims[].control", item["control"]) +
                        ": claims[].control: accounting follows from the format and has no "
                        "negative control; only findings take one");
    if (c.kind == "accounting" && !is_byte_metric(metric) && metric != "final_gap")
      throw ConfigError(where(src, "claims[].kind", item["kind"]) +
                        ": claims[].kind: only byte metrics (payload_compression, wire_ratio) "
                        "follow from a format, and final_gap from a construction; '" +
                        metric + "' is a finding");
    if (item["at_least"]) c.at_least = p.at_least;
    if (item["at_most"]) c.at_most = p.at_most;
    if (!c.at_least && !c.at_most)
      throw ConfigError(where(src, "claims", item) + ": claims[]: give at_least and/or at_most");
    if (YAML::Node w = item["window"]) {
      if (!is_byte_metric(metric))
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

}  // namespace cedar
