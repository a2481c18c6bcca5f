#include "config/experiment_config.h"

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/known_names.h"
#include "config/step_range.h"

namespace cedar {
namespace {

YAML::Node load_file(const std::string& path) {
  // An ifstream opens a folder without complaint and reads nothing, which would be all defaults.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(path + ": is a folder, not an experiment file");
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open experiment file");
  try {
    return YAML::Load(in);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's depth guard reports "bad file"; say what it means.
    const bool deep = dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr;
    throw ConfigError(
        path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
        ": YAML syntax error: " + (deep ? "lists or mappings nested too deeply" : e.msg));
  }
}

// The node of `key` inside `section`, or `section` itself where it has no such key (the place
// to point an error at). A section the file lacks is an invalid node to yaml-cpp, and asking one
// for its type throws; IsDefined is the one question it answers.
YAML::Node key_in(const YAML::Node& section, const char* key) {
  if (section.IsDefined() && section.IsMap()) {
    const YAML::Node node = section[key];
    if (node.IsDefined()) return node;
  }
  return section;
}

// A model or dataset name must be one the registries build: checked now, at the key's place,
// rather than after the run's set-up when the registry is asked for it.
void check_known(const std::string& value, const std::vector<std::string>& known, const char* what,
                 const std::string& key, const Source& src, const YAML::Node& section) {
  for (const auto& k : known)
    if (k == value) return;
  const YAML::Node node = key_in(section, "name");
  throw ConfigError(where(src, key, node) + ": " + key + ": unknown " + what + " '" + value +
                    "' (known: " + join_names(known) + ")");
}

// network.profile and intra_profile name built-in profiles unless network.profiles gives a file
// of more (read where the run starts, comm/run_network_profiles.h): checked here without one.
void check_builtin_profiles(const NetworkConfig& n, const Source& src, const YAML::Node& section) {
  if (!n.profiles.empty()) return;
  const auto check = [&](const char* key, const std::string& value, const Bound& choices) {
    if (std::find(choices.choices.begin(), choices.choices.end(), value) != choices.choices.end())
      return;
    throw ConfigError(where(src, std::string("network.") + key, key_in(section, key)) +
                      ": network." + key + ": '" + value + "' is not one of " + choices.describe());
  };
  check("profile", n.profile, one_of(known_network_profile_names()));
  check("intra_profile", n.intra_profile, one_of(NetworkConfig::intra_profile_choices()));
}

bool is_regression_data(const std::string& name) {
  return name == "synthetic-regression" || name == "sign-counterexample";
}
bool is_convex_model(const std::string& name) { return name == "linear" || name == "logistic"; }

// Full-batch convex training: regression data sets, their models and train.full_batch go
// together, and the task of the data is the model's.
void check_full_batch(const ExperimentConfig& c, const YAML::Node& root) {
  const YAML::Node train = root["train"], model = root["model"], data = root["data"];
  auto at = [&](const char* key, const YAML::Node& section, const char* sub) {
    return where(c.source, key, key_in(section, sub));
  };
  const bool regression = is_regression_data(c.data.name), convex = is_convex_model(c.model.name);
  if (regression != convex)
    throw ConfigError(at("model.name", model, "name") + ": model.name: '" + c.model.name +
                      "' with data '" + c.data.name +
                      "': the convex models (linear, logistic) take the regression data sets "
                      "(synthetic-regression, sign-counterexample), and only they");
  if (regression && !c.train.full_batch)
    throw ConfigError(at("train.full_batch", train, "full_batch") + ": data '" + c.data.name +
                      "' is one shard per worker, trained full batch: set train.full_batch: true");
  if (c.train.full_batch && !regression)
    throw ConfigError(at("train.full_batch", train, "full_batch") +
                      ": train.full_batch: whole shards are for the regression data sets "
                      "(synthetic-regression, sign-counterexample), not '" +
                      c.data.name + "'");
  if (c.train.target_gap > 0 && !c.train.full_batch)
    throw ConfigError(at("train.target_gap", train, "target_gap") +
                      ": train.target_gap: the gap f(theta) - f* is known in full-batch runs only");
  if (!regression) return;
  const std::string task = c.data.name == "sign-counterexample" ? "linear" : c.data.task;
  if (task != c.model.name)
    throw ConfigError(at("data.task", data, "task") + ": data.task '" + task +
                      "' needs model.name '" + task + "', not '" + c.model.name + "'");
  if (c.train.overlap || c.train.amp != "off")
    throw ConfigError(at("train.full_batch", train, "full_batch") +
                      ": train.full_batch: the convex models compute in float64; train.overlap "
                      "and train.amp are for the networks");
  if (c.train.fusion != "size")
    throw ConfigError(at("train.fusion", train, "fusion") + ": train.fusion: " + c.train.fusion +
                      ": the convex models are one tensor, a single bucket; use size");
  if (c.algorithm == "ps")
    throw ConfigError(
        at("algorithm", root, "algorithm") +
        ": algorithm ps: full-batch training runs through the all-reduce trainer only; the "
        "parameter server's workers draw minibatches (use algorithm lag for LAG-WK)");
}

template <class P>
void emit_section(YAML::Emitter& out, const char* key, P& p) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  YamlDumper d(out);
  p.visit(d);
  out << YAML::EndMap;
}

}  // namespace

void apply_override(YAML::Node& root, const std::string& assignment, Source& source) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set " + assignment + ": expected key=value (e.g. train.epochs=2)");
  std::string key = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty())
      throw ConfigError("--set " + assignment + ": empty component in key '" + key + "'");
    parts.push_back(p);
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + assignment + ": cannot parse value: " + e.msg);
  }
  // Walk with explicit node copies (yaml-cpp nodes are handles); create maps on the way.
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (!next.IsDefined() || next.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = chain.back()[parts[i]];
    }
    if (!next.IsMap())
      throw ConfigError("--set " + assignment + ": '" + parts[i] + "' is not a mapping");
    chain.push_back(next);
  }
  chain.back()[parts.back()] = parsed;
  source.overridden.insert(key);
}

ExperimentConfig parse_experiment(const YAML::Node& root, Source source) {
  ExperimentConfig c;
  c.source = std::move(source);
  if (!root.IsMap()) throw ConfigError(c.source.file + ": expected a mapping at the top level");
  {
    // Top level: the sections plus name/suite; `grid` and `claims` belong to suites.
    YamlLoader top(root, c.source, "",
                   {"model", "data", "train", "optimizer", "network", "results", "algorithm",
                    "grid", "claims", "description"});
    c.visit_top(top);
    top.finish();
  }
  load_params(c.model, root["model"], c.source, "model");
  load_params(c.data, root["data"], c.source, "data");
  load_params(c.train, root["train"], c.source, "train");
  load_params(c.optimizer, root["optimizer"], c.source, "optimizer");
  load_params(c.network, root["network"], c.source, "network");
  check_builtin_profiles(c.network, c.source, root["network"]);
  load_params(c.results, root["results"], c.source, "results");
  check_known(c.model.name, known_model_names(), "model", "model.name", c.source, root["model"]);
  check_known(c.data.name, known_dataset_names(), "dataset", "data.name", c.source, root["data"]);

  YAML::Node alg = root["algorithm"];
  c.algorithm_params = YAML::Node(YAML::NodeType::Map);
  if (alg.IsDefined() && !alg.IsNull()) {
    if (alg.IsScalar()) {
      c.algorithm = alg.Scalar();
    } else if (alg.IsMap()) {
      for (const MapEntry& kv : checked_entries(alg, c.source, "algorithm")) {
        if (kv.key == "name") {
          if (!kv.value.IsScalar())
            throw ConfigError(where(c.source, "algorithm.name", kv.value) +
                              ": algorithm.name: expected a string");
          c.algorithm = kv.value.Scalar();
        } else {
          c.algorithm_params[kv.key_node] = kv.value;
        }
      }
    } else {
      throw ConfigError(where(c.source, "algorithm", alg) +
                        ": algorithm: expected a name or a mapping with 'name'");
    }
  }
  const YAML::Node data = root["data"];
  if (c.data.decode == "lazy" && c.data.name != "imagenet-folder")
    throw ConfigError(where(c.source, "data.decode", key_in(data, "decode")) +
                      ": data.decode: lazy decoding is for imagenet-folder, whose images are "
                      "files; '" +
                      c.data.name + "' is read into memory whole");
  const YAML::Node train = root["train"];
  if (c.train.backend == "nccl" && c.train.device == "cpu")
    throw ConfigError(where(c.source, "train.backend", key_in(train, "backend")) +
                      ": train.backend: nccl needs train.device cuda (or auto on a machine with a "
                      "GPU); on the CPU use mpi or auto");
  // fp16 checks every rank's gradients for inf/NaN before any of them is exchanged; with overlap
  // the exchange starts during backward, before the last gradient exists.
  if (c.train.amp == "fp16" && c.train.overlap) {
    throw ConfigError(where(c.source, "train.amp", key_in(train, "amp")) +
                      ": train.amp: fp16 (loss scaling) is not supported with train.overlap: "
                      "true; use bf16 or turn overlap off");
  }
  if (c.train.schedule == "priority" && !c.train.overlap)
    throw ConfigError(where(c.source, "train.schedule", key_in(train, "schedule")) +
                      ": train.schedule: priority orders the exchanges that overlap backward; set "
                      "train.overlap: true");
  check_full_batch(c, root);
  try {
    parse_step_range(c.train.trace_steps);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(where(c.source, "train.trace_steps", key_in(train, "trace_steps")) +
                      ": train.trace_steps: " + e.what());
  }
  if (c.optimizer.schedule == "step" && c.optimizer.milestones.empty())
    throw ConfigError(where(c.source, "optimizer.milestones", root["optimizer"]) +
                      ": optimizer.milestones: the step schedule needs at least one milestone");
  return c;
}

ExperimentConfig load_experiment(const std::string& path,
                                 const std::vector<std::string>& overrides) {
  YAML::Node root = load_file(path);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  // Checked before the overrides, which can only be applied to a mapping.
  if (!root.IsMap()) throw ConfigError(path + ": expected a mapping of sections at the top level");
  Source src{path, {}};
  for (const auto& o : overrides) apply_override(root, o, src);
  return parse_experiment(root, src);
}

std::string resolved_yaml(const ExperimentConfig& c0, const std::string& algorithm_yaml) {
  ExperimentConfig c = c0;
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << c.name;
  out << YAML::Key << "suite" << YAML::Value << c.suite;
  emit_section(out, "model", c.model);
  emit_section(out, "data", c.data);
  emit_section(out, "train", c.train);
  emit_section(out, "optimizer", c.optimizer);
  emit_section(out, "network", c.network);
  out << YAML::Key << "algorithm" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << c.algorithm;
  YAML::Node params = YAML::Load(algorithm_yaml);
  if (params.IsMap())
    for (const auto& kv : params) out << YAML::Key << kv.first << YAML::Value << kv.second;
  out << YAML::EndMap;
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace cedar
