// Reading runs for projection: each run's per-step collective mix from comm_totals, its levels,
// and a parameter server's gradients, pushes and replies (reports/projection.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "reports/projection.h"
#include "reports/results_reader.h"
#include "reports/run_config.h"

namespace cedar {
namespace {

const std::string kRunsQuery = std::string("SELECT ") + kRunColumns + R"SQL(,
       (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.compute_seconds), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.latency_steps), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.bus_bytes), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.dense_bytes), 0) FROM steps s WHERE s.run_id = r.id),
       COALESCE(r.servers, 0),
       (SELECT COALESCE(SUM(v.value), 0) FROM step_stats v WHERE v.run_id = r.id
          AND v.key = 'gradients'),
       (SELECT COALESCE(SUM(s.payload_bytes_all), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COUNT(DISTINCT s.epoch) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(t.payload_bytes), 0) FROM comm_totals t WHERE t.run_id = r.id
          AND t.rank < COALESCE(r.servers, 0) AND t.op IN ('send', 'sendrecv')),
       r.config
FROM runs r
WHERE CASE WHEN ?2 > 0 THEN r.id = ?2
      ELSE (?1 = '' OR r.suite = ?1) AND r.status = 'completed'
           AND )SQL" CEDAR_LATEST_FINISHED_RUN R"SQL(
      END
ORDER BY r.id
)SQL";

const char* kLongestEpochQuery =
    "SELECT COUNT(*) FROM steps WHERE run_id = ?1 GROUP BY epoch ORDER BY 1 DESC LIMIT 1";

const char* kCommQuery =
    "SELECT op, SUM(calls), SUM(payload_bytes), SUM(CASE WHEN rank = 0 THEN bus_bytes ELSE 0 END), "
    "COUNT(*) FROM comm_totals WHERE run_id = ?1 GROUP BY op ORDER BY op";

const char* kLevelsQuery =
    "SELECT level, MAX(ranks), MAX(profile) FROM step_levels WHERE run_id = ?1 GROUP BY level "
    "ORDER BY level";

// Databases before schema version 3 have no step_levels (a read-only reader does not migrate).
bool has_step_levels(ResultsReader& db) {
  sqlite3_stmt* st = db.prepare(
      "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'step_levels'");
  const bool found = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
  sqlite3_finalize(st);
  return found;
}

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
  sqlite3_stmt* st = db.prepare(kLongestEpochQuery);
  sqlite3_bind_int64(st, 1, m.id);
  if (sqlite3_step(st) == SQLITE_ROW) m.steps_per_epoch = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);

  if (has_step_levels(db)) {
    st = db.prepare(kLevelsQuery);
    sqlite3_bind_int64(st, 1, m.id);
    while (sqlite3_step(st) == SQLITE_ROW)
      m.levels.push_back({column_text(st, 0),
                          column_text(st, 2),
                          static_cast<int>(sqlite3_column_int64(st, 1)),
                          {}});
    sqlite3_finalize(st);
  }

  st = db.prepare(kCommQuery);
  sqlite3_bind_int64(st, 1, m.id);
  const double steps = double(std::max<int64_t>(1, m.steps));
  const double ranks = double(std::max<int64_t>(1, m.world_size));
  while (sqlite3_step(st) == SQLITE_ROW) {
    CollectiveMix c;
    c.op = column_text(st, 0);
    if (is_split(c.op)) continue;
    const std::string::size_type slash = c.op.rfind('/');
    if (slash == std::string::npos) {
      // A rank that never made a collective has no row for it: divide by the world size.
      c.calls = double(sqlite3_column_int64(st, 1)) / ranks / steps;
      c.payload_bytes = double(sqlite3_column_int64(st, 2)) / ranks / steps;
      c.bus_bytes = double(sqlite3_column_int64(st, 3)) / steps;
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
    const double takers = double(std::max<int64_t>(1, sqlite3_column_int64(st, 4)));
    c.op = c.op.substr(slash + 1);
    c.calls = double(sqlite3_column_int64(st, 1)) / takers / steps;
    c.payload_bytes = double(sqlite3_column_int64(st, 2)) / takers / steps;
    c.bus_bytes = double(sqlite3_column_int64(st, 3)) / steps;
    c.share = takers / ranks;
    level->collectives.push_back(c);
  }
  sqlite3_finalize(st);

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
  sqlite3_stmt* st = db.prepare(kRunsQuery.c_str());
  sqlite3_bind_text(st, 1, suite.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, run_id);
  while (sqlite3_step(st) == SQLITE_ROW) {
    RunMeasurement m;
    read_run_columns(st, m);
    m.steps = sqlite3_column_int64(st, 9);
    const double steps = double(std::max<int64_t>(1, m.steps));
    m.compute_seconds_per_step = sqlite3_column_double(st, 10) / steps;
    m.recorded_latency_steps = double(sqlite3_column_int64(st, 11)) / steps;
    m.recorded_bus_bytes = double(sqlite3_column_int64(st, 12)) / steps;
    m.dense_payload_bytes = double(sqlite3_column_int64(st, 13)) / steps;
    m.servers = sqlite3_column_int64(st, 14);
    if (m.servers > 0) {
      const double gradients = sqlite3_column_double(st, 15);
      const double epochs = double(std::max<int64_t>(1, sqlite3_column_int64(st, 17)));
      m.gradients_per_epoch = gradients / epochs;
      m.push_bytes_per_gradient =
          gradients > 0 ? double(sqlite3_column_int64(st, 16)) / gradients : 0;
      m.pull_bytes_per_gradient =
          gradients > 0 ? double(sqlite3_column_int64(st, 18)) / gradients : 0;
      m.synchronous =
          config_scalar(column_text(st, 19), "algorithm", "mode").value_or("bsp") == "bsp";
      if (gradients <= 0) m.unusable = "a parameter-server run without its gradient counts";
    }
    out.push_back(m);
  }
  sqlite3_finalize(st);
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
    if (g.size() > 1) {
      const double n = double(g.size());
      m.collectives.clear();
      m.compute_seconds_per_step = m.recorded_latency_steps = m.recorded_bus_bytes = 0;
      m.dense_payload_bytes = 0;
      std::map<std::string, CollectiveMix> mix;
      for (const auto* r : g) {
        m.steps_per_epoch = std::max(m.steps_per_epoch, r->steps_per_epoch);
        m.compute_seconds_per_step += r->compute_seconds_per_step / n;
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
      double var = 0;
      for (const auto* r : g)
        var += std::pow(r->compute_seconds_per_step - m.compute_seconds_per_step, 2);
      m.compute_seconds_seed_std = std::sqrt(var / (n - 1));
    }
    out.push_back(m);
  }
  return out;
}
}  // namespace cedar
