#include "reports/claim_revisions.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <optional>

namespace cedar {
namespace {

std::string scalar(const YAML::Node& item, const char* key) {
  const YAML::Node n = item[key];
  return n && n.IsScalar() ? n.Scalar() : "";
}

std::optional<double> number(const YAML::Node& item, const char* key) {
  const YAML::Node n = item[key];
  if (!n || !n.IsScalar()) return std::nullopt;
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string or_none(const std::string& s) { return s.empty() ? "–" : s; }

ClaimRevision parse_one(const YAML::Node& item) {
  ClaimRevision r;
  Claim& c = r.claim;
  c.text = scalar(item, "text");
  c.source = scalar(item, "source");
  c.setting = scalar(item, "setting");
  c.reduced = scalar(item, "reduced");
  c.run = scalar(item, "run");
  c.baseline = scalar(item, "baseline");
  c.control = scalar(item, "control");
  c.metric = scalar(item, "metric");
  if (c.metric == "compression") c.metric = "payload_compression";  // as load_claims reads it
  if (!scalar(item, "profile").empty()) c.profile = scalar(item, "profile");
  r.kind_stated = !scalar(item, "kind").empty();
  if (r.kind_stated) c.kind = scalar(item, "kind");
  c.at_least = number(item, "at_least");
  c.at_most = number(item, "at_most");
  r.seed_tolerance = scalar(item, "seed_tolerance");
  if (const YAML::Node w = item["window"]; w && w.IsMap()) {
    if (auto v = number(w, "from_step")) c.window.from_step = static_cast<int64_t>(*v);
    if (auto v = number(w, "from_epoch")) c.window.from_epoch = static_cast<int64_t>(*v);
    c.window.last_epoch = scalar(w, "last_epoch") == "true";
  }
  return r;
}

}  // namespace

std::string claim_bounds(const Claim& c) {
  std::string s;
  if (c.at_least) s += "≥ " + num(*c.at_least);
  if (c.at_most) s += (s.empty() ? "" : ", ") + std::string("≤ ") + num(*c.at_most);
  return s.empty() ? "no bound" : s;
}

std::vector<ClaimRevision> parse_claim_revisions(const std::string& yaml_text) {
  std::vector<ClaimRevision> out;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception&) {
    return out;
  }
  if (!root.IsMap()) return out;
  const YAML::Node list = root["claims"];
  if (!list || !list.IsSequence()) return out;
  for (const auto& item : list)
    if (item.IsMap()) out.push_back(parse_one(item));
  return out;
}

std::vector<FieldChange> claim_changes(const ClaimRevision& before, const ClaimRevision& after) {
  const Claim &a = before.claim, &b = after.claim;
  std::vector<FieldChange> out;
  auto field = [&](const char* name, const std::string& x, const std::string& y) {
    if (x != y) out.push_back({name, or_none(x), or_none(y)});
  };
  auto bound = [&](const char* name, const std::optional<double>& x,
                   const std::optional<double>& y) {
    if (x != y) out.push_back({name, x ? num(*x) : "–", y ? num(*y) : "–"});
  };
  bound("at_least", a.at_least, b.at_least);
  bound("at_most", a.at_most, b.at_most);
  field("metric", a.metric, b.metric);
  field("baseline", a.baseline, b.baseline);
  field("kind", before.kind_stated ? a.kind : "", after.kind_stated ? b.kind : "");
  field("window", a.window.describe(), b.window.describe());
  field("profile", a.metric == "modeled_speedup" ? a.profile : "",
        b.metric == "modeled_speedup" ? b.profile : "");
  field("control", a.control, b.control);
  field("seed_tolerance", before.seed_tolerance, after.seed_tolerance);
  field("run", a.run, b.run);
  field("text", a.text, b.text);
  field("setting", a.setting, b.setting);
  field("reduced", a.reduced, b.reduced);
  field("source", a.source, b.source);
  return out;
}

std::vector<ClaimPair> pair_claims(const std::vector<ClaimRevision>& before,
                                   const std::vector<ClaimRevision>& after) {
  std::vector<int> match(after.size(), -1);
  std::vector<bool> taken(before.size(), false);
  using Same = bool (*)(const Claim&, const Claim&);
  const Same rules[] = {
      [](const Claim& x, const Claim& y) {
        return x.run == y.run && x.metric == y.metric && x.text == y.text;
      },
      [](const Claim& x, const Claim& y) { return x.run == y.run && x.metric == y.metric; },
      [](const Claim& x, const Claim& y) { return x.run == y.run && x.text == y.text; }};
  for (Same same : rules)
    for (size_t j = 0; j < after.size(); ++j) {
      if (match[j] >= 0) continue;
      for (size_t i = 0; i < before.size(); ++i)
        if (!taken[i] && same(before[i].claim, after[j].claim)) {
          match[j] = static_cast<int>(i);
          taken[i] = true;
          break;
        }
    }
  std::vector<ClaimPair> out;
  for (size_t j = 0; j < after.size(); ++j) out.push_back({match[j], static_cast<int>(j)});
  for (size_t i = 0; i < before.size(); ++i)
    if (!taken[i]) out.push_back({static_cast<int>(i), -1});
  return out;
}

}  // namespace cedar
