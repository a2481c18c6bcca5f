// The preflight of a suite (see preflight.h): configurations first, then, for the runs about to
// launch, each distinct data set probed once, each distinct model built once, the step size
// against the training set, and the output folders with the space the runs would fill.
#include "runner/suite/preflight.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "algorithms/algorithm.h"
#include "comm/run_network_profiles.h"
#include "config/experiment_config.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "results/disk_space.h"
#include "results/results_mode.h"
#include "results/shards.h"
#include "results/store.h"

namespace cedar {
namespace {

const std::vector<std::string> kGroups = {"configuration", "data", "models", "sizes", "folders"};

// Problems as found, a repeated one (same group and message) naming one more run.
class Problems {
 public:
  void add(const std::string& group, const std::string& message, const std::string& run) {
    for (auto& p : list_) {
      if (p.group != group || p.message != message) continue;
      if (std::find(p.runs.begin(), p.runs.end(), run) == p.runs.end()) p.runs.push_back(run);
      return;
    }
    list_.push_back({group, message, {run}});
  }
  void add(const std::string& group, const std::string& message,
           const std::vector<std::string>& runs) {
    for (const auto& r : runs) add(group, message, r);
  }
  std::vector<PreflightProblem> sorted() const {
    std::vector<PreflightProblem> out;
    for (const auto& g : kGroups)
      for (const auto& p : list_)
        if (p.group == g) out.push_back(p);
    return out;
  }

 private:
  std::vector<PreflightProblem> list_;
};

// The first line of an exception's message (LibTorch appends its stack trace after it).
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string megabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// A run about to launch, with what the checks learn about it.
struct Candidate {
  std::string name;
  ExperimentConfig cfg;
  int world_size = 1;
  DatasetSpec data;
  const DatasetProbe* probe = nullptr;  // null until probed
  int64_t parameters = -1;              // -1: the model did not build
};

// Every field of a DatasetSpec the probe reads: runs with equal keys load the same data.
std::string data_key(const DatasetSpec& d) {
  return d.name + "\n" + d.root + "\n" + std::to_string(d.train_limit) + "\n" +
         std::to_string(d.test_limit) + "\n" + std::to_string(d.num_classes) + "\n" +
         std::to_string(d.per_class) + "\n" + std::to_string(d.image_size);
}

std::string describe_shape(const ImageSetShape& s) {
  return std::to_string(s.channels) + " x " + std::to_string(s.height) + " x " +
         std::to_string(s.width) + " images, " + std::to_string(s.num_classes) + " classes";
}

void check_data(std::vector<Candidate>& runs, Problems& problems,
                std::map<std::string, DatasetProbe>& probes) {
  for (auto& c : runs) {
    auto [it, fresh] = probes.try_emplace(data_key(c.data));
    if (fresh) it->second = probe_dataset(c.data);
    c.probe = &it->second;
    for (const auto& p : c.probe->problems) problems.add("data", c.data.name + ": " + p, c.name);
  }
}

size_t check_models(std::vector<Candidate>& runs, Problems& problems) {
  std::map<std::string, std::pair<int64_t, std::string>> built;  // key -> (parameters, error)
  for (auto& c : runs) {
    if (!c.probe->ok()) continue;
    ModelSpec spec;
    spec.name = c.cfg.model.name;
    spec.in_channels = c.probe->train.channels;
    spec.num_classes = c.probe->train.num_classes;
    spec.image_size = c.probe->train.height;
    spec.small_input = c.cfg.model.small_input;
    const std::string key = spec.name + "/" + std::to_string(spec.in_channels) + "/" +
                            std::to_string(spec.num_classes) + "/" +
                            std::to_string(spec.image_size) + "/" +
                            std::to_string(spec.small_input);
    auto [it, fresh] = built.try_emplace(key, -1, "");
    if (fresh) {
      try {
        it->second.first = count_parameters(*make_model(spec));
      } catch (const std::exception& e) {
        it->second.second = "model.name " + spec.name + " for the " +
                            describe_shape(c.probe->train) + " of " + c.data.name + ": " +
                            first_line(e.what());
      }
    }
    c.parameters = it->second.first;
    if (!it->second.second.empty()) problems.add("models", it->second.second, c.name);
  }
  return built.size();
}

// Training steps a run would take (0 when not one batch fits).
int64_t steps_of(const Candidate& c) {
  const int64_t global = c.cfg.train.batch_size * c.world_size;
  const int64_t per_epoch = c.probe->train.count / std::max<int64_t>(1, global);
  const int64_t all = c.cfg.train.epochs * per_epoch;
  return c.cfg.train.max_steps > 0 ? std::min(c.cfg.train.max_steps, all) : all;
}

void check_sizes(const std::vector<Candidate>& runs, Problems& problems) {
  for (const auto& c : runs) {
    if (!c.probe->ok()) continue;
    const int64_t global = c.cfg.train.batch_size * c.world_size;
    const int64_t count = c.probe->train.count;
    if (count >= global) continue;
    const std::string limit = c.data.train_limit > 0
                                  ? " (data.train_limit " + std::to_string(c.data.train_limit) + ")"
                                  : "";
    problems.add("sizes",
                 "train.batch_size " + std::to_string(c.cfg.train.batch_size) + " x " +
                     std::to_string(c.world_size) + " rank(s) = " + std::to_string(global) +
                     " images per step, more than the " + std::to_string(count) +
                     " training images of " + c.data.name + limit + ": each rank's shard of " +
                     std::to_string(count / c.world_size) +
                     " images is smaller than a batch, so no step would run",
                 c.name);
  }
}

// The filesystem (device) holding `path`'s nearest existing folder; 0 when it cannot be told.
dev_t device_of(const std::string& path) {
  struct stat st {};
  return ::stat(nearest_existing(path).c_str(), &st) == 0 ? st.st_dev : 0;
}

struct SpaceNeed {
  std::string folders;  // the outputs on this filesystem, for the message
  int64_t bytes = 0;
  std::vector<std::string> runs;
};

void check_folders(const std::vector<Candidate>& runs, const std::string& db, Problems& problems) {
  std::vector<std::string> all;
  for (const auto& c : runs) all.push_back(c.name);
  if (all.empty()) return;
  const std::string db_folder = std::filesystem::path(db).parent_path().string();
  const std::string reason = unwritable_reason(db_folder.empty() ? "." : db_folder);
  if (!reason.empty()) problems.add("folders", "results database '" + db + "': " + reason, all);
  std::set<std::string> unwritable;  // their free space is beside the point
  if (!reason.empty()) unwritable.insert(db);
  std::error_code ec;
  if (std::filesystem::exists(db, ec) && ::access(db.c_str(), W_OK) != 0)
    problems.add("folders",
                 "results database '" + db + "' is not writable: " + std::strerror(errno), all);

  // Space: the database keeps every run's rows; a checkpoint folder holds one run's checkpoints
  // at a time (a completed run's are removed), one file per rank.
  std::map<dev_t, SpaceNeed> needs;
  auto need = [&](const std::string& folder, int64_t bytes, const std::string& run) {
    if (unwritable.count(folder)) return;
    SpaceNeed& n = needs[device_of(folder)];
    if (n.folders.find("'" + folder + "'") == std::string::npos)
      n.folders += (n.folders.empty() ? "'" : ", '") + folder + "'";
    n.bytes += bytes;
    if (std::find(n.runs.begin(), n.runs.end(), run) == n.runs.end()) n.runs.push_back(run);
  };
  std::map<std::string, std::vector<std::string>> checkpoint_runs;  // folder -> its runs
  for (const auto& c : runs)
    if (c.cfg.train.checkpoint)
      checkpoint_runs[c.cfg.train.checkpoint_dir.empty() ? checkpoints_dir(db)
                                                         : c.cfg.train.checkpoint_dir]
          .push_back(c.name);
  for (const auto& [root, names] : checkpoint_runs) {
    const std::string why = unwritable_reason(root);
    if (why.empty()) continue;
    problems.add("folders", "checkpoint folder '" + root + "': " + why, names);
    unwritable.insert(root);
  }
  std::map<std::string, int64_t> checkpoint_peak;
  for (const auto& c : runs) {
    if (c.probe->ok()) need(db, database_bytes_for(steps_of(c)), c.name);
    if (!c.cfg.train.checkpoint) continue;
    const std::string root =
        c.cfg.train.checkpoint_dir.empty() ? checkpoints_dir(db) : c.cfg.train.checkpoint_dir;
    if (c.parameters < 0) continue;
    const int64_t bytes = c.world_size * checkpoint_bytes_for(c.parameters);
    int64_t& peak = checkpoint_peak[root];
    if (bytes > peak) {
      need(root, bytes - peak, c.name);
      peak = bytes;
    }
  }
  for (const auto& [device, n] : needs) {
    const std::string folder = n.folders.substr(1, n.folders.find('\'', 1) - 1);
    const int64_t free = free_bytes(folder);
    if (free >= 0 && free < n.bytes)
      problems.add("folders",
                   "not enough free space for " + n.folders + ": '" + nearest_existing(folder) +
                       "' has " + megabytes(free) + " free, the runs' rows and checkpoints take " +
                       "about " + megabytes(n.bytes),
                   n.runs);
  }
}

}  // namespace

bool PreflightReport::configurations_ok() const {
  for (const auto& p : problems)
    if (p.group == "configuration") return false;
  return true;
}

std::string PreflightReport::summary() const {
  std::set<std::string> stopped;
  for (const auto& p : problems) stopped.insert(p.runs.begin(), p.runs.end());
  return std::to_string(problems.size()) +
         (problems.size() == 1 ? " problem stops " : " problems stop ") +
         std::to_string(stopped.size()) + " of " + std::to_string(runs) + " run(s)";
}

std::string PreflightReport::render() const {
  std::string out;
  std::string group;
  for (const auto& p : problems) {
    if (p.group != group) out += "  " + (group = p.group) + ":\n";
    std::string who;
    if (p.runs.size() == runs && runs > 1) {
      who = "all " + std::to_string(runs) + " runs";
    } else {
      for (const auto& r : p.runs) who += (who.empty() ? "" : ", ") + r;
      who = (p.runs.size() == 1 ? "run " : "runs ") + who;
    }
    out += "    - " + p.message + " [" + who + "]\n";
  }
  return out;
}

namespace {

// The last line of a failed preflight: what was checked, and what --skip-preflight would change.
std::string error_trailer(const PreflightReport& report) {
  bool skippable = false;
  for (const auto& p : report.problems) skippable = skippable || p.group != "configuration";
  return "  (" + report.checked() +
         (skippable ? "; --skip-preflight launches without the data, model, size and folder checks)"
                    : "; configurations are checked with --skip-preflight too)");
}

}  // namespace

PreflightError::PreflightError(const PreflightReport& report)
    : std::runtime_error("preflight: " + report.summary() +
                         "; nothing was launched and nothing written\n" + report.render() +
                         error_trailer(report)) {}

std::string PreflightReport::checked() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%zu run(s) checked: %zu data set(s), %zu model(s), in %.2f s",
                launching, data_sets, models, seconds);
  return buf;
}

PreflightReport preflight(const Suite& suite, const PreflightOptions& opts) {
  const auto start = std::chrono::steady_clock::now();
  PreflightReport report;
  report.runs = suite.runs.size();
  report.fingerprints.assign(suite.runs.size(), "");
  Problems problems;
  std::vector<bool> valid(suite.runs.size(), false);
  for (size_t i = 0; i < suite.runs.size(); ++i) {
    const SuiteRun& r = suite.runs[i];
    if (!r.error.empty()) {
      problems.add("configuration", r.error, r.name);
      continue;
    }
    try {
      const ExperimentConfig cfg = load_experiment(suite.file, r.overrides);
      std::string algorithm_yaml;
      find_algorithm(cfg.algorithm).make(cfg.algorithm_params, cfg.source, &algorithm_yaml);
      // Names a profile it lacks, or a missing file, before launching.
      const RunNetworkProfiles profiles = run_network_profiles(cfg);
      report.fingerprints[i] =
          run_fingerprint(resolved_yaml(cfg, algorithm_yaml) + profiles.note, r.world_size);
      valid[i] = true;
    } catch (const std::exception& e) {
      problems.add("configuration", e.what(), r.name);
    }
  }

  if (opts.environment) {
    std::vector<Candidate> launching;
    std::vector<size_t> indices = opts.runs;
    if (indices.empty())
      for (size_t i = 0; i < suite.runs.size(); ++i) indices.push_back(i);
    for (size_t i : indices) {
      if (i >= suite.runs.size() || !valid[i]) continue;
      if (completed_in_results(opts.db, report.fingerprints[i])) continue;  // not launched again
      Candidate c;
      c.name = suite.runs[i].name;
      c.cfg = load_experiment(suite.file, suite.runs[i].overrides);
      c.world_size = suite.runs[i].world_size;
      c.data = dataset_spec(c.cfg);
      launching.push_back(std::move(c));
    }
    std::map<std::string, DatasetProbe> probes;
    check_data(launching, problems, probes);
    report.models = check_models(launching, problems);
    check_sizes(launching, problems);
    check_folders(launching, opts.db, problems);
    report.launching = launching.size();
    report.data_sets = probes.size();
  }
  report.problems = problems.sorted();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace cedar
