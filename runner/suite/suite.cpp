// Grid expansion (see suite.h). Every grid value is checked where it stands, with its
// file:line:column, before any run's configuration is built: types, known model and dataset
// names, keys repeated in one mapping, values listed twice, and keys that two parts of the suite
// would both set (a run would silently take the later one): the keys the suite sets itself
// (name, suite, train.seed), a key a grid list varies (model.name under grid.model, ...), and one
// key set by an algorithm entry's `set:` and by grid.overrides. Fixed keys of the base
// configuration are not among them: the grid replaces those by design.
#include "runner/suite/suite.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <utility>

#include "config/experiment_config.h"
#include "config/known_names.h"
#include "config/params.h"
#include "runner/suite/every_registered.h"

namespace cedar {
namespace {

std::string flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

// The text of a node that must be a scalar, else an error naming its place, its key and what was
// expected (yaml-cpp's own conversion error says only "bad conversion").
std::string scalar_at(const YAML::Node& n, const Source& src, const std::string& key,
                      const char* expected) {
  if (!n.IsScalar())
    throw ConfigError(where(src, key, n) + ": " + key + ": expected " + expected + ", got " +
                      node_kind(n));
  return n.Scalar();
}

std::vector<YAML::Node> list_of(const YAML::Node& grid, const char* key, const Source& src) {
  if (!grid.IsMap()) return {};
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

// Values listed twice would make the same runs twice.
void check_unique(std::set<std::string>& seen, const std::string& value, const YAML::Node& n,
                  const Source& src, const std::string& key) {
  if (!seen.insert(value).second)
    throw ConfigError(where(src, key, n) + ": " + key + ": " + value + " is listed twice");
}

// One --set assignment made by a grid entry, with the entry's place for messages.
struct Assignment {
  std::string key;                  // dotted, e.g. optimizer.lr
  std::string text;                 // key=value
  std::string at;                   // file:line:col of the entry ("" when not from the grid)
  std::string path;                 // the grid key, e.g. grid.overrides
  std::vector<std::string> leaves;  // the dotted keys it sets (a mapping value sets several)
  std::string origin() const { return at + ": " + path; }
};

Assignment suite_set(const std::string& key, const std::string& value) {
  return {key, key + "=" + value, "", "", {key}};
}

void collect_leaves(const std::string& key, const YAML::Node& value,
                    std::vector<std::string>& out) {
  if (!value.IsMap() || value.size() == 0) {
    out.push_back(key);
    return;
  }
  for (const auto& kv : value)
    collect_leaves(key + "." + (kv.first.IsScalar() ? kv.first.Scalar() : std::string("?")),
                   kv.second, out);
}

// Whether setting `a` and setting `b` touch the same value: equal, or one inside the other.
bool overlaps(const std::string& a, const std::string& b) {
  auto inside = [](const std::string& in, const std::string& outer) {
    return in.size() > outer.size() && in.compare(0, outer.size(), outer) == 0 &&
           in[outer.size()] == '.';
  };
  return a == b || inside(a, b) || inside(b, a);
}

// The assignments of a mapping of dotted keys (grid.overrides items, an entry's `set:`).
std::vector<Assignment> assignments_of(const YAML::Node& map, const Source& src,
                                       const std::string& path) {
  std::vector<Assignment> out;
  for (const MapEntry& kv : checked_entries(map, src, path)) {
    Assignment a{kv.key, kv.key + "=" + flow(kv.value), where(src, path, kv.key_node), path, {}};
    collect_leaves(kv.key, kv.value, a.leaves);
    for (const Assignment& before : out)
      if (overlaps(before.key, a.key))
        throw ConfigError(a.origin() + ": '" + a.key + "' and '" + before.key +
                          "' set the same value; a run would take one silently");
    out.push_back(std::move(a));
  }
  return out;
}

// A key the suite itself sets in every run (or a grid list sets), which an assignment must leave.
struct Reserved {
  std::string key;
  std::string by;  // what sets it, for the message
};

void check_reserved(const std::vector<Assignment>& sets, const std::vector<Reserved>& reserved) {
  for (const Assignment& a : sets)
    for (const std::string& leaf : a.leaves)
      for (const Reserved& r : reserved)
        if (overlaps(leaf, r.key))
          throw ConfigError(a.origin() + ": '" + leaf + "' is set by " + r.by);
}

struct AlgorithmChoice {
  std::string label;
  std::vector<Assignment> sets;  // algorithm={...} (absent for the base algorithm), then `set:`
};

// One entry of grid.algorithm: a list item as written, or (`implied`) one that an `every`
// mapping stands for (every_registered.h), its settings mapping in `item` (null or empty: none,
// and the entry is the bare name).
AlgorithmChoice algorithm_choice(const YAML::Node& item, const Source& src,
                                 const ImpliedAlgorithmEntry* implied = nullptr) {
  const std::string path = implied ? implied->path : "grid.algorithm";
  const std::string at = where(src, path, implied ? implied->place : item);
  if (implied && (!item.IsDefined() || item.IsNull() || (item.IsMap() && item.size() == 0)))
    return {implied->name, {{"algorithm", "algorithm=" + implied->name, at, path, {"algorithm"}}}};
  if (!implied && item.IsScalar())
    return {item.Scalar(), {{"algorithm", "algorithm=" + item.Scalar(), at, path, {"algorithm"}}}};
  if (!item.IsMap() || (!implied && !item["name"]))
    throw ConfigError(at + ": grid.algorithm: each entry is a name or a mapping with 'name'");
  YAML::Node copy(YAML::NodeType::Map);
  std::string label;
  std::vector<Assignment> extra;
  if (implied) {
    copy["name"] = implied->name;
    label = implied->name;
  }
  for (const MapEntry& kv : checked_entries(item, src, path)) {
    if (kv.key == "name") {
      const std::string name = scalar_at(kv.value, src, path + ".name", "an algorithm name");
      if (label.empty()) label = name;
      copy[kv.key_node] = kv.value;
    } else if (kv.key == "label") {
      label = scalar_at(kv.value, src, path + ".label", "a string");
    } else if (kv.key == "set") {
      if (!kv.value.IsMap())
        throw ConfigError(where(src, path + ".set", kv.value) + ": " + path +
                          ".set: expected a mapping of dotted keys to values");
      extra = assignments_of(kv.value, src, path + ".set");
    } else {
      copy[kv.key_node] = kv.value;
    }
  }
  // The entry is the algorithm: its parameters go beside 'name', where the plugin reads them.
  for (const Assignment& a : extra)
    if (overlaps(a.key, "algorithm"))
      throw ConfigError(a.origin() + ": '" + a.key +
                        "' belongs in the entry itself, beside 'name'");
  AlgorithmChoice choice{label,
                         {{"algorithm", "algorithm=" + flow(copy), at, path, {"algorithm"}}}};
  for (auto& a : extra) choice.sets.push_back(std::move(a));
  return choice;
}

// A grid list of registry names (grid.model, grid.dataset), each known and listed once.
std::vector<std::string> names_of(const YAML::Node& grid, const char* key, const char* what,
                                  const std::vector<std::string>& known, const Source& src) {
  const std::string path = std::string("grid.") + key;
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& n : list_of(grid, key, src)) {
    const std::string name = scalar_at(n, src, path, (std::string("a ") + what + " name").c_str());
    bool found = false;
    for (const auto& k : known) found = found || k == name;
    if (!found)
      throw ConfigError(where(src, path, n) + ": " + path + ": unknown " + what + " '" + name +
                        "' (known: " + join_names(known) + ")");
    check_unique(seen, name, n, src, path);
    out.push_back(name);
  }
  return out;
}

// A run's configuration failed: when the message names a --set key that a grid entry assigned,
// say which entry (the last assignment of a key is the one that took effect).
std::string blame(const std::string& message, const std::vector<Assignment>& sets) {
  const std::string prefix = "--set ";
  if (message.compare(0, prefix.size(), prefix) != 0) return message;
  const size_t end = message.find_first_of(":=", prefix.size());
  const std::string key =
      message.substr(prefix.size(), end == std::string::npos ? end : end - prefix.size());
  for (auto it = sets.rbegin(); it != sets.rend(); ++it)
    if (it->key == key) return it->at.empty() ? message : it->origin() + ": " + message;
  return message;
}

}  // namespace

Suite expand_suite(const std::string& path, const RegisteredAlgorithms& registered,
                   const std::vector<std::string>& extra_overrides, bool keep_invalid_runs) {
  // Validates the base experiment first (unknown keys etc.).
  ExperimentConfig base = load_experiment(path, extra_overrides);
  YAML::Node root = YAML::LoadFile(path);
  Source src{path, {}};
  YAML::Node grid = root["grid"];
  if (grid.IsDefined() && !grid.IsNull() && !grid.IsMap())
    throw ConfigError(where(src, "grid", grid) + ": grid: expected a mapping");
  const std::set<std::string> known = {"algorithm",  "model", "dataset",
                                       "world_size", "seed",  "overrides"};
  if (grid.IsMap())
    for (const MapEntry& kv : checked_entries(grid, src, "grid"))
      if (!known.count(kv.key))
        throw ConfigError(where(src, "grid", kv.key_node) + ": unknown key 'grid." + kv.key +
                          "' (known: algorithm, dataset, model, overrides, seed, world_size)");

  std::vector<AlgorithmChoice> algorithms;
  if (grid.IsMap() && grid["algorithm"].IsMap()) {  // {every: registered, settings: ...}
    for (const auto& e : every_registered_entries(grid["algorithm"], src, registered.names))
      algorithms.push_back(algorithm_choice(e.settings, src, &e));
  } else {
    for (const auto& a : list_of(grid, "algorithm", src))
      algorithms.push_back(algorithm_choice(a, src));
  }
  const bool vary_algorithm = !algorithms.empty();
  if (algorithms.empty()) algorithms.push_back({base.algorithm, {}});
  // Duplicate labels get an index so every run name is unique.
  std::set<std::string> seen;
  for (size_t i = 0; i < algorithms.size(); ++i)
    if (!seen.insert(algorithms[i].label).second) algorithms[i].label += "-" + std::to_string(i);

  std::vector<std::string> models = names_of(grid, "model", "model", known_model_names(), src);
  std::vector<std::string> datasets =
      names_of(grid, "dataset", "dataset", known_dataset_names(), src);
  std::vector<int> worlds;
  std::set<std::string> seen_worlds, seen_seeds;
  for (const auto& w : list_of(grid, "world_size", src)) {
    int v = 0;
    if (!w.IsScalar() || !YAML::convert<int>::decode(w, v) || v < 1)
      throw ConfigError(where(src, "grid.world_size", w) +
                        ": grid.world_size: expected positive integers, got " +
                        (w.IsScalar() ? "'" + w.Scalar() + "'" : std::string(node_kind(w))));
    check_unique(seen_worlds, std::to_string(v), w, src, "grid.world_size");
    worlds.push_back(v);
  }
  if (worlds.empty()) worlds.push_back(1);
  std::vector<uint64_t> seeds;
  for (const auto& s : list_of(grid, "seed", src)) {
    uint64_t v = 0;
    if (!s.IsScalar() || !YAML::convert<uint64_t>::decode(s, v))
      throw ConfigError(where(src, "grid.seed", s) +
                        ": grid.seed: expected non-negative integers, got " +
                        (s.IsScalar() ? "'" + s.Scalar() + "'" : std::string(node_kind(s))));
    check_unique(seen_seeds, std::to_string(v), s, src, "grid.seed");
    seeds.push_back(v);
  }
  if (seeds.empty()) seeds.push_back(base.train.seed);
  std::vector<std::vector<Assignment>> sweeps;
  for (const auto& o : list_of(grid, "overrides", src)) {
    if (!o.IsMap())
      throw ConfigError(where(src, "grid.overrides", o) + ": grid.overrides: expected mappings");
    sweeps.push_back(assignments_of(o, src, "grid.overrides"));
  }

  // Keys two parts of the suite would both set, one silently winning: the suite's own per-run
  // keys, the keys a grid list varies, and a key set by both an algorithm entry and an override.
  std::vector<Reserved> reserved = {
      {"name", "the suite for every run (the run's name)"},
      {"suite", "the suite for every run (the suite's name)"},
      {"train.seed", "the suite for every run (list seeds under grid.seed)"}};
  if (!models.empty()) reserved.push_back({"model.name", "grid.model"});
  if (!datasets.empty()) reserved.push_back({"data.name", "grid.dataset"});
  for (const auto& a : algorithms)  // an entry's `set:` (after its algorithm= assignment)
    check_reserved(std::vector<Assignment>(a.sets.begin() + (vary_algorithm ? 1 : 0), a.sets.end()),
                   reserved);
  if (vary_algorithm)
    reserved.push_back({"algorithm", "grid.algorithm (give parameters in its entries)"});
  for (const auto& sweep : sweeps) {
    check_reserved(sweep, reserved);
    for (const Assignment& o : sweep)
      for (const auto& a : algorithms)
        for (size_t i = 1; i < a.sets.size(); ++i)
          if (overlaps(o.key, a.sets[i].key))
            throw ConfigError(
                o.origin() + ": '" + o.key + "' is also set by grid.algorithm entry '" + a.label +
                "' ('" + a.sets[i].key + "', " + a.sets[i].at + "); a run would take one silently");
  }
  if (sweeps.empty()) sweeps.push_back({});
  if (models.empty()) models.push_back("");
  if (datasets.empty()) datasets.push_back("");

  Suite suite;
  suite.file = path;
  suite.name = base.suite.empty() ? base.name : base.suite;
  for (uint64_t seed :
       seeds)  // slowest: a partial suite is a complete comparison of its first seeds
    for (const auto& a : algorithms)
      for (const auto& m : models)
        for (const auto& d : datasets)
          for (int w : worlds)
            for (size_t o = 0; o < sweeps.size(); ++o) {
              SuiteRun r;
              r.algorithm_label = a.label;
              r.world_size = w;
              r.seed = seed;
              r.name = a.label;
              if (models.size() > 1) r.name += "/" + m;
              if (datasets.size() > 1) r.name += "/" + d;
              if (worlds.size() > 1) r.name += "/np" + std::to_string(w);
              if (sweeps.size() > 1) r.name += "/o" + std::to_string(o);
              std::vector<Assignment> sets;
              for (const auto& e : extra_overrides)
                sets.push_back({e.substr(0, e.find('=')), e, "", "", {}});
              for (const auto& s : a.sets) sets.push_back(s);
              if (!m.empty()) sets.push_back(suite_set("model.name", m));
              if (!d.empty()) sets.push_back(suite_set("data.name", d));
              for (const auto& s : sweeps[o]) sets.push_back(s);
              sets.push_back(suite_set("train.seed", std::to_string(seed)));
              sets.push_back(suite_set("name", r.name));
              sets.push_back(suite_set("suite", suite.name));
              for (const auto& s : sets) r.overrides.push_back(s.text);
              try {
                load_experiment(path,
                                r.overrides);  // every run's config is valid before any starts
              } catch (const ConfigError& e) {
                if (!keep_invalid_runs) throw ConfigError(blame(e.what(), sets));
                r.error = blame(e.what(), sets);
              }
              suite.runs.push_back(std::move(r));
            }
  return suite;
}

}  // namespace cedar
