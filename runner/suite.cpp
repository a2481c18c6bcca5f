#include "runner/suite.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>

#include "runner/config.h"
#include "runner/params.h"

namespace cedar {
namespace {

std::string flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

std::vector<YAML::Node> list_of(const YAML::Node& grid, const char* key, const Source& src) {
  YAML::Node n = grid[key];
  if (!n.IsDefined() || n.IsNull()) return {};
  if (!n.IsSequence())
    throw ConfigError(where(src, std::string("grid.") + key, n) + ": grid." + key +
                      ": expected a list");
  if (n.size() == 0)
    throw ConfigError(where(src, std::string("grid.") + key, n) + ": grid." + key + ": empty list");
  std::vector<YAML::Node> out;
  for (const auto& item : n) out.push_back(item);
  return out;
}

struct AlgorithmChoice {
  std::string label;
  std::string assignment;         // algorithm={...}
  std::vector<std::string> extra;  // the entry's `set:` overrides (e.g. its own learning rate)
};

AlgorithmChoice algorithm_choice(const YAML::Node& item, const Source& src) {
  if (item.IsScalar()) return {item.Scalar(), "algorithm=" + item.Scalar()};
  if (!item.IsMap() || !item["name"])
    throw ConfigError(where(src, "grid.algorithm", item) +
                      ": grid.algorithm: each entry is a name or a mapping with 'name'");
  YAML::Node copy(YAML::NodeType::Map);
  std::string label = item["name"].as<std::string>();
  std::vector<std::string> extra;
  for (const auto& kv : item) {
    const std::string key = kv.first.as<std::string>();
    if (key == "label") {
      label = kv.second.as<std::string>();
    } else if (key == "set") {
      if (!kv.second.IsMap())
        throw ConfigError(where(src, "grid.algorithm.set", kv.second) +
                          ": grid.algorithm.set: expected a mapping of dotted keys to values");
      for (const auto& o : kv.second) extra.push_back(o.first.as<std::string>() + "=" + flow(o.second));
    } else {
      copy[kv.first] = kv.second;
    }
  }
  return {label, "algorithm=" + flow(copy), extra};
}

}  // namespace

Suite expand_suite(const std::string& path, const std::vector<std::string>& extra_overrides) {
  // Validates the base experiment first (unknown keys etc.).
  ExperimentConfig base = load_experiment(path, extra_overrides);
  YAML::Node root = YAML::LoadFile(path);
  Source src{path, {}};
  YAML::Node grid = root["grid"];
  if (grid.IsDefined() && !grid.IsNull() && !grid.IsMap())
    throw ConfigError(where(src, "grid", grid) + ": grid: expected a mapping");
  const std::set<std::string> known = {"algorithm", "model", "dataset", "world_size", "seed", "overrides"};
  if (grid.IsMap())
    for (const auto& kv : grid)
      if (!known.count(kv.first.as<std::string>()))
        throw ConfigError(where(src, "grid", kv.first) + ": unknown key 'grid." +
                          kv.first.as<std::string>() +
                          "' (known: algorithm, dataset, model, overrides, seed, world_size)");

  std::vector<AlgorithmChoice> algorithms;
  for (const auto& a : list_of(grid, "algorithm", src)) algorithms.push_back(algorithm_choice(a, src));
  if (algorithms.empty()) algorithms.push_back({base.algorithm, ""});
  // Duplicate labels get an index so every run name is unique.
  std::set<std::string> seen;
  for (size_t i = 0; i < algorithms.size(); ++i)
    if (!seen.insert(algorithms[i].label).second) algorithms[i].label += "-" + std::to_string(i);

  auto scalars = [&](const char* key) {
    std::vector<std::string> out;
    for (const auto& n : list_of(grid, key, src)) {
      if (!n.IsScalar())
        throw ConfigError(where(src, std::string("grid.") + key, n) + ": grid." + key +
                          ": expected a list of scalars");
      out.push_back(n.Scalar());
    }
    return out;
  };
  std::vector<std::string> models = scalars("model"), datasets = scalars("dataset");
  std::vector<int> worlds;
  for (const auto& w : list_of(grid, "world_size", src)) {
    int v = 0;
    if (!YAML::convert<int>::decode(w, v) || v < 1)
      throw ConfigError(where(src, "grid.world_size", w) + ": grid.world_size: expected positive integers");
    worlds.push_back(v);
  }
  if (worlds.empty()) worlds.push_back(1);
  std::vector<uint64_t> seeds;
  for (const auto& s : list_of(grid, "seed", src)) {
    uint64_t v = 0;
    if (!YAML::convert<uint64_t>::decode(s, v))
      throw ConfigError(where(src, "grid.seed", s) + ": grid.seed: expected non-negative integers");
    seeds.push_back(v);
  }
  if (seeds.empty()) seeds.push_back(base.train.seed);
  std::vector<std::vector<std::string>> sweeps;
  for (const auto& o : list_of(grid, "overrides", src)) {
    if (!o.IsMap()) throw ConfigError(where(src, "grid.overrides", o) + ": grid.overrides: expected mappings");
    std::vector<std::string> sets;
    for (const auto& kv : o) sets.push_back(kv.first.as<std::string>() + "=" + flow(kv.second));
    sweeps.push_back(sets);
  }
  if (sweeps.empty()) sweeps.push_back({});
  if (models.empty()) models.push_back("");
  if (datasets.empty()) datasets.push_back("");

  Suite suite;
  suite.file = path;
  suite.name = base.suite.empty() ? base.name : base.suite;
  for (const auto& a : algorithms)
    for (const auto& m : models)
      for (const auto& d : datasets)
        for (int w : worlds)
          for (size_t o = 0; o < sweeps.size(); ++o)
            for (uint64_t seed : seeds) {
              SuiteRun r;
              r.algorithm_label = a.label;
              r.world_size = w;
              r.seed = seed;
              r.name = a.label;
              if (models.size() > 1) r.name += "/" + m;
              if (datasets.size() > 1) r.name += "/" + d;
              if (worlds.size() > 1) r.name += "/np" + std::to_string(w);
              if (sweeps.size() > 1) r.name += "/o" + std::to_string(o);
              r.overrides = extra_overrides;
              if (!a.assignment.empty()) r.overrides.push_back(a.assignment);
              for (const auto& e : a.extra) r.overrides.push_back(e);
              if (!m.empty()) r.overrides.push_back("model.name=" + m);
              if (!d.empty()) r.overrides.push_back("data.name=" + d);
              for (const auto& s : sweeps[o]) r.overrides.push_back(s);
              r.overrides.push_back("train.seed=" + std::to_string(seed));
              r.overrides.push_back("name=" + r.name);
              r.overrides.push_back("suite=" + suite.name);
              load_experiment(path, r.overrides);  // every run's config is valid before any starts
              suite.runs.push_back(std::move(r));
            }
  return suite;
}

}  // namespace cedar
