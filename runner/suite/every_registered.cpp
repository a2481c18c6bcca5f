#include "runner/suite/every_registered.h"

#include <yaml-cpp/yaml.h>

#include <map>

#include "config/known_names.h"

namespace cedar {

std::vector<ImpliedAlgorithmEntry> every_registered_entries(
    const YAML::Node& node, const Source& src, const std::vector<std::string>& registered) {
  YAML::Node every, settings;
  bool has_every = false;
  for (const MapEntry& kv : checked_entries(node, src, "grid.algorithm")) {
    if (kv.key == "every") {
      every = kv.value;
      has_every = true;
    } else if (kv.key == "settings") {
      settings = kv.value;
    } else {
      throw ConfigError(where(src, "grid.algorithm", kv.key_node) +
                        ": unknown key 'grid.algorithm." + kv.key +
                        "' (known: every, settings; or give grid.algorithm as a list)");
    }
  }
  if (!has_every)
    throw ConfigError(where(src, "grid.algorithm", node) +
                      ": grid.algorithm: a mapping needs 'every: registered' (or give a list)");
  if (!every.IsScalar() || every.Scalar() != "registered")
    throw ConfigError(
        where(src, "grid.algorithm.every", every) +
        ": grid.algorithm.every: expected 'registered', got " +
        (every.IsScalar() ? "'" + every.Scalar() + "'" : std::string(node_kind(every))));
  if (registered.empty())
    throw ConfigError(where(src, "grid.algorithm.every", every) +
                      ": grid.algorithm.every: this program knows no registered algorithms");

  std::map<std::string, MapEntry> by_name;
  if (settings.IsDefined() && !settings.IsNull()) {
    if (!settings.IsMap())
      throw ConfigError(where(src, "grid.algorithm.settings", settings) +
                        ": grid.algorithm.settings: expected a mapping of algorithm names to their "
                        "keys, got " +
                        node_kind(settings));
    for (const MapEntry& kv : checked_entries(settings, src, "grid.algorithm.settings")) {
      bool covered = false;
      for (const auto& r : registered) covered = covered || r == kv.key;
      if (!covered)
        throw ConfigError(where(src, "grid.algorithm.settings", kv.key_node) +
                          ": grid.algorithm.settings: '" + kv.key +
                          "' is not a registered algorithm that every: registered runs (those: " +
                          join_names(registered) + ")");
      const std::string path = "grid.algorithm.settings." + kv.key;
      if (!kv.value.IsMap())
        throw ConfigError(where(src, path, kv.value) + ": " + path +
                          ": expected a mapping of the algorithm's keys, got " +
                          node_kind(kv.value));
      if (kv.value["name"])
        throw ConfigError(where(src, path, kv.value) + ": " + path +
                          ": the key above names the algorithm; no 'name' here");
      by_name.emplace(kv.key, kv);
    }
  }
  std::vector<ImpliedAlgorithmEntry> out;
  for (const auto& name : registered) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      out.push_back({name, YAML::Node(), every, "grid.algorithm.every"});
    } else {
      out.push_back({name, it->second.value, it->second.value, "grid.algorithm.settings." + name});
    }
  }
  return out;
}

}  // namespace cedar
