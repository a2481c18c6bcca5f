// Reading runs for projection: each run's per-step collective mix from comm_totals, its levels,
// and a parameter server's gradients, pushes and replies (reports/projection.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "reports/projection.h"
#include "reports/provenance_table.h"
#include "reports/run_config.h"
#include "results/comm_queries.h"
#include "results/run_queries.h"
#include "results/step_queries.h"

namespace cedar {
namespace {

LevelMix* find_level(RunMeasurement& m, const std::string& name) {
  for (auto& l : m.levels)
    if (l.name == name) return &l;
  return nullptr;
}

// Sub-communicators are formed once, before training: not part of any step.
bool is_split(const std::string& op) {
  return op == "split" || (op.size() > 6 && op.compare(op.size() - 6, 6, "/split") == 0);
}

void read_details(ResultsReader& db, RunMeasurement& m) {
  if (const auto longest = read_longest_epoch_steps(db, m.id)) m.steps_per_epoch = *longest;

  for (const RunLevel& l : read_run_levels(db, m.id))
    m.levels.push_back({l.level, l.profile, static_cast<int>(l.ranks), {}});

  const double steps = double(std::max<int64_t>(1, m.steps));
  const double ranks = double(std::max<int64_t>(1, m.world_size));
  for (const OpTotals& t : read_op_totals(db, m.id)) {
    CollectiveMix c;
    c.op = t.op;
    if (is_split(c.op)) continue;
    const std::string::size_type slash = c.op.rfind('/');
    if (slash == std::string::npos) {
      // A rank that never made a collective has no row for it: divide by the world size.
      c.calls = double(t.calls) / ranks / steps;
      c.payload_bytes = double(t.payload_bytes) / ranks / steps;
      c.bus_bytes = double(t.rank0_bus_bytes) / steps;
      m.collectives.push_back(c);
      continue;
    }
    // A level's collective: per rank taking part (e.g. the node leaders between nodes).
    LevelMix* level = find_level(m, c.op.substr(0, slash));
    if (!level) {
      m.unusable = "comm_totals has traffic of level '" + c.op.substr(0, slash) +
                   "' but step_levels has no rows of it";
      continue;
    }
    const double takers = double(std::max<int64_t>(1, t.ranks));
    c.op = c.op.substr(slash + 1);
    c.calls = double(t.calls) / takers / steps;
    c.payload_bytes = double(t.payload_bytes) / takers / steps;
    c.bus_bytes = double(t.rank0_bus_bytes) / steps;
    c.share = takers / ranks;
    level->collectives.push_back(c);
  }

  if (!m.unusable.empty()) return;
  if (m.steps == 0)
    m.unusable = "no steps recorded";
  else if (m.world_size < 2)
    m.unusable = "measured on 1 rank, which sends no bytes: project a run of 2 or more ranks";
  else if (m.collectives.empty() && m.levels.empty())
    m.unusable = "no comm_totals rows (written when a run finishes; status " + m.status + ")";
}

std::string group_key(const RunMeasurement& m) {
  return m.name + "\x1f" + m.model + "\x1f" + m.dataset + "\x1f" + std::to_string(m.world_size);
}
}  // namespace

std::vector<RunMeasurement> load_measurements(const std::string& db_path, const std::string& suite,
                                              int64_t run_id) {
  ResultsReader db(db_path);
  std::vector<RunMeasurement> out;
  for (const RunStepSums& r : read_run_step_sums(db, suite, run_id)) {
    RunMeasurement m;
    m.id = r.run.id;
    m.suite = r.run.suite;
    m.name = r.run.name;
    m.algorithm = r.run.algorithm;
    m.model = r.run.model;
    m.dataset = r.run.dataset;
    m.status = r.run.status;
    m.world_size = r.run.world_size;
    m.seed = r.run.seed;
    m.steps = r.steps;
    const double steps = double(std::max<int64_t>(1, m.steps));
    m.compute_seconds_per_step = r.compute_seconds / steps;
    m.recorded_latency_steps = double(r.latency_steps) / steps;
    m.recorded_bus_bytes = double(r.bus_bytes) / steps;
    m.dense_payload_bytes = double(r.dense_bytes) / steps;
    m.other_load = other_load_of(r.run.provenance.value_or(""));
    m.servers = r.run.servers.value_or(0);
    const std::string scheme =
        config_scalar(r.run.config, "network", "allreduce").value_or("library");
    try {
      m.allreduce = parse_allreduce_scheme(scheme);
    } catch (const std::invalid_argument&) {
      m.unusable = "network.allreduce '" + scheme + "' has no cost rule";
    }
    if (m.servers > 0) {
      const double gradients = r.gradients;
      const double epochs = double(std::max<int64_t>(1, r.epochs));
      m.gradients_per_epoch = gradients / epochs;
      m.push_bytes_per_gradient = gradients > 0 ? double(r.payload_bytes_all) / gradients : 0;
      m.pull_bytes_per_gradient =
          gradients > 0 ? double(r.server_send_payload_bytes) / gradients : 0;
      m.synchronous = config_scalar(r.run.config, "algorithm", "mode").value_or("bsp") == "bsp";
      if (gradients <= 0) m.unusable = "a parameter-server run without its gradient counts";
    }
    out.push_back(m);
  }
  for (auto& m : out) read_details(db, m);
  return out;
}

std::vector<RunMeasurement> average_seeds(const std::vector<RunMeasurement>& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RunMeasurement*>> groups;
  for (const auto& r : runs) {
    if (!r.unusable.empty()) continue;
    const std::string key = group_key(r);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  std::vector<RunMeasurement> out;
  for (const auto& key : order) {
    const auto& g = groups[key];
    RunMeasurement m = *g[0];
    m.seeds = static_cast<int>(g.size());
    // Compute time from the seeds timed on a quiet host, where any were (bytes from all seeds).
    std::vector<const RunMeasurement*> timed;
    for (const auto* r : g)
      if (timed_on_quiet_host(r->other_load)) timed.push_back(r);
    if (timed.empty()) timed = g;
    m.timed_seeds = static_cast<int>(timed.size());
    for (const auto* r : timed)
      if (r->other_load > kQuietMachineShare) m.timed_beside_other_work = true;
    m.compute_seconds_per_step = 0;
    for (const auto* r : timed) m.compute_seconds_per_step += r->compute_seconds_per_step;
    m.compute_seconds_per_step /= double(timed.size());
    m.compute_seconds_seed_std = 0;
    if (timed.size() > 1) {
      double var = 0;
      for (const auto* r : timed)
        var += std::pow(r->compute_seconds_per_step - m.compute_seconds_per_step, 2);
      m.compute_seconds_seed_std = std::sqrt(var / double(timed.size() - 1));
    }
    if (g.size() > 1) {
      const double n = double(g.size());
      m.collectives.clear();
      m.recorded_latency_steps = m.recorded_bus_bytes = 0;
      m.dense_payload_bytes = 0;
      std::map<std::string, CollectiveMix> mix;
      for (const auto* r : g) {
        m.steps_per_epoch = std::max(m.steps_per_epoch, r->steps_per_epoch);
        m.recorded_latency_steps += r->recorded_latency_steps / n;
        m.recorded_bus_bytes += r->recorded_bus_bytes / n;
        m.dense_payload_bytes += r->dense_payload_bytes / n;
        for (const auto& c : r->collectives) {
          CollectiveMix& a = mix[c.op];
          a.op = c.op;
          a.calls += c.calls / n;
          a.payload_bytes += c.payload_bytes / n;
          a.bus_bytes += c.bus_bytes / n;
        }
      }
      for (const auto& kv : mix) m.collectives.push_back(kv.second);
      // Each level's mix likewise, by level and collective.
      std::map<std::string, std::map<std::string, CollectiveMix>> level_mix;
      for (const auto* r : g)
        for (const auto& l : r->levels)
          for (const auto& c : l.collectives) {
            CollectiveMix& a = level_mix[l.name][c.op];
            a.op = c.op;
            a.calls += c.calls / n;
            a.payload_bytes += c.payload_bytes / n;
            a.bus_bytes += c.bus_bytes / n;
            a.share = c.share;
          }
      for (auto& l : m.levels) {
        l.collectives.clear();
        for (const auto& kv : level_mix[l.name]) l.collectives.push_back(kv.second);
      }
    }
    out.push_back(m);
  }
  return out;
}
}  // namespace cedar
