#include "reports/claims.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "runner/comm/network_model.h"
#include "runner/params.h"

namespace cedar {

const std::vector<std::string> kClaimMetrics = {
    "accuracy",     "accuracy_gap",    "best_accuracy", "payload_compression", "wire_ratio",
    "compression",  "wall_speedup",    "modeled_speedup"};

namespace {

struct ClaimParams {
  std::string text, source, run, metric, profile = "1gbe";
  double at_least = 0, at_most = 0;
  template <class V>
  void visit(V& v) {
    v("text", text, "the claim in words");
    v("source", source, "paper and table");
    v("run", run, "run name in the suite");
    v("metric", metric, "what is measured", one_of(kClaimMetrics));
    v("profile", profile, "network profile (modeled_speedup)", one_of(network_profile_names()));
    v("at_least", at_least, "lower bound on the metric");
    v("at_most", at_most, "upper bound on the metric");
  }
};

const ComparisonRow* find_row(const std::vector<ComparisonRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name && r.completed > 0) return &r;
  return nullptr;
}

const ComparisonRow* dense_of(const std::vector<ComparisonRow>& rows, const ComparisonRow& r) {
  for (const auto& b : rows)
    if (b.algorithm == "dense" && b.completed > 0 && b.model == r.model && b.dataset == r.dataset &&
        b.world_size == r.world_size)
      return &b;
  return nullptr;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

std::vector<Claim> load_claims(const std::string& path) {
  YAML::Node root = YAML::LoadFile(path);
  YAML::Node list = root["claims"];
  std::vector<Claim> claims;
  if (!list.IsDefined() || list.IsNull()) return claims;
  Source src{path, {}};
  if (!list.IsSequence()) throw ConfigError(where(src, "claims", list) + ": claims: expected a list");
  for (const auto& item : list) {
    ClaimParams p;
    load_params(p, item, src, "claims[]");
    if (p.run.empty() || p.metric.empty())
      throw ConfigError(where(src, "claims", item) + ": claims[]: 'run' and 'metric' are required");
    // `compression` is the accepted older name of payload compression.
    const std::string metric = p.metric == "compression" ? "payload_compression" : p.metric;
    Claim c{p.text, p.source, p.run, metric, p.profile, std::nullopt, std::nullopt};
    if (item["at_least"]) c.at_least = p.at_least;
    if (item["at_most"]) c.at_most = p.at_most;
    if (!c.at_least && !c.at_most)
      throw ConfigError(where(src, "claims", item) + ": claims[]: give at_least and/or at_most");
    claims.push_back(c);
  }
  return claims;
}

std::vector<ClaimVerdict> evaluate_claims(const std::vector<Claim>& claims,
                                          const std::vector<ComparisonRow>& rows) {
  std::vector<ClaimVerdict> out;
  for (const auto& c : claims) {
    ClaimVerdict v{c, "not enough runs", std::nullopt};
    const ComparisonRow* r = find_row(rows, c.run);
    const ComparisonRow* d = r ? dense_of(rows, *r) : nullptr;
    bool needs_dense = c.metric != "accuracy" && c.metric != "best_accuracy";
    if (r && (d || !needs_dense)) {
      if (c.metric == "accuracy") v.measured = 100 * r->final_mean;
      else if (c.metric == "best_accuracy") v.measured = 100 * r->best_mean;
      else if (c.metric == "accuracy_gap") v.measured = 100 * (r->final_mean - d->final_mean);
      else if (c.metric == "payload_compression" || c.metric == "compression")
        v.measured = r->payload_compression;
      else if (c.metric == "wire_ratio") v.measured = r->wire_ratio;
      else if (c.metric == "wall_speedup" && r->wall_mean > 0) v.measured = d->wall_mean / r->wall_mean;
      else if (c.metric == "modeled_speedup" && modeled_seconds_on(*r, c.profile) > 0)
        v.measured = modeled_seconds_on(*d, c.profile) / modeled_seconds_on(*r, c.profile);
      if (v.measured) {
        bool ok = (!c.at_least || *v.measured >= *c.at_least) && (!c.at_most || *v.measured <= *c.at_most);
        v.verdict = ok ? "reproduced" : "not reproduced";
      }
    }
    out.push_back(v);
  }
  return out;
}

std::string render_claims_markdown(const std::vector<ClaimVerdict>& verdicts) {
  std::ostringstream s;
  s << "| claim | source | run | metric | claimed | measured | verdict |\n";
  s << "|---|---|---|---|---|---:|---|\n";
  for (const auto& v : verdicts) {
    std::string claimed;
    if (v.claim.at_least) claimed += "≥ " + num(*v.claim.at_least);
    if (v.claim.at_most) claimed += std::string(claimed.empty() ? "" : ", ") + "≤ " + num(*v.claim.at_most);
    std::string metric = v.claim.metric;
    if (metric == "modeled_speedup") metric += " (" + v.claim.profile + ")";
    s << "| " << v.claim.text << " | " << v.claim.source << " | " << v.claim.run << " | " << metric
      << " | " << claimed << " | " << (v.measured ? num(*v.measured) : "–") << " | " << v.verdict
      << " |\n";
  }
  return s.str();
}

}  // namespace cedar
