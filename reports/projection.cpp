#include "reports/projection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "comm/bus_bytes.h"
#include "comm/network_model.h"
#include "reports/byte_ratios.h"
#include "reports/results_reader.h"

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
       (SELECT COUNT(DISTINCT s.epoch) FROM steps s WHERE s.run_id = r.id)
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

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string group_key(const RunMeasurement& m) {
  return m.name + "\x1f" + m.model + "\x1f" + m.dataset + "\x1f" + std::to_string(m.world_size);
}

bool uses(const Projection& p, const char* family) {
  auto in = [&](const std::vector<CollectiveMix>& mix) {
    for (const auto& c : mix) {
      std::string f = c.op == "allgatherv" ? "allgather" : c.op;
      if (f == family) return true;
    }
    return false;
  };
  if (in(p.basis.collectives)) return true;
  for (const auto& l : p.basis.levels)
    if (in(l.collectives)) return true;
  return false;
}

std::string ratio(double v) { return v > 0 ? fmt("%.2f×", v) : "–"; }

// CSV seconds: empty when the epoch holds fewer samples than one global batch.
std::string secs(const ProjectionPoint& pt, double v) {
  return pt.steps_per_epoch > 0 ? fmt("%.6f", v) : std::string();
}

}  // namespace

CollectiveCost collective_cost(const CollectiveMix& mix, int workers) {
  CollectiveCost c;
  const double p = double(workers);
  if (mix.op == "allreduce") {
    c.latency_steps = mix.calls * double(allreduce_latency_steps(workers));
    c.bus_bytes = allreduce_busbw_factor(workers) * mix.payload_bytes;
  } else if (mix.op == "allgather" || mix.op == "allgatherv") {
    // Every rank receives the others' contributions: (P-1)/P of P * s. allgatherv's payload
    // already holds its 8-byte count, and it runs two allgathers (counts, then data).
    const double rounds = mix.op == "allgatherv" ? 2 : 1;
    c.latency_steps = rounds * mix.calls * double(allgather_latency_steps(workers));
    c.bus_bytes = allgather_busbw_factor(workers) * p * mix.payload_bytes;
  } else if (mix.op == "broadcast") {
    c.latency_steps = mix.calls * double(broadcast_latency_steps(workers));
    c.bus_bytes = workers > 1 ? mix.bus_bytes : 0;
  } else if (mix.op == "barrier") {
    c.latency_steps = mix.calls * double(allgather_latency_steps(workers));
  } else if (mix.op == "send" || mix.op == "sendrecv" || mix.op == "recv" || mix.op == "recv_any") {
    // Point to point: each send or sendrecv one message of its payload (a recv's bytes are its
    // sender's). How many messages a rank sends on other P depends on the exchange (gTop-k's
    // recursive doubling: log2 P), which the mix does not say: costed as measured.
    const bool sends = mix.op != "recv" && mix.op != "recv_any";
    c.latency_steps = sends ? mix.calls : 0;
    c.bus_bytes = sends && workers > 1 ? mix.payload_bytes : 0;
  } else {
    throw std::runtime_error("comm_totals: collective '" + mix.op +
                             "' has no cost rule (known: allreduce, allgather, allgatherv, "
                             "broadcast, barrier, send, sendrecv, recv, recv_any)");
  }
  return c;
}

int level_ranks_at(const RunMeasurement& m, const LevelMix& level, int workers) {
  if (level.name == "intra") return std::max(1, std::min(level.ranks, workers));
  const double scaled = double(level.ranks) * workers / double(std::max<int64_t>(1, m.world_size));
  return std::max(1, static_cast<int>(std::floor(scaled)));
}

CollectiveCost level_cost(const RunMeasurement& m, const LevelMix& level, int workers) {
  CollectiveCost total;
  const int n = level_ranks_at(m, level, workers);
  for (const auto& mix : level.collectives) {
    CollectiveCost c = collective_cost(mix, n);
    total.latency_steps += c.latency_steps;
    total.bus_bytes += c.bus_bytes;
  }
  return total;
}

CollectiveCost step_cost(const RunMeasurement& m, int workers) {
  CollectiveCost total;
  for (const auto& mix : m.collectives) {
    CollectiveCost c = collective_cost(mix, workers);
    total.latency_steps += c.latency_steps;
    total.bus_bytes += c.bus_bytes;
  }
  for (const auto& level : m.levels) {
    CollectiveCost c = level_cost(m, level, workers);
    total.latency_steps += c.latency_steps;
    total.bus_bytes += c.bus_bytes;
  }
  return total;
}

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

const RunMeasurement* dense_baseline(const std::vector<RunMeasurement>& baselines,
                                     const RunMeasurement& m) {
  const RunMeasurement* best = nullptr;
  int best_score = -1;
  for (const auto& b : baselines) {
    if (b.algorithm != "dense" || !b.unusable.empty() || b.model != m.model ||
        b.dataset != m.dataset)
      continue;
    int score = (b.suite == m.suite ? 4 : 0) + (b.name == "dense" ? 2 : 0) +
                (b.world_size == m.world_size ? 1 : 0);
    if (score > best_score) best = &b, best_score = score;
  }
  return best;
}

int measured_workers(const RunMeasurement& m) { return static_cast<int>(m.world_size - m.servers); }

namespace {

// The servers' links carry every push: see the top of projection.h.
ProjectionPoint project_parameter_server(const RunMeasurement& m, int workers,
                                         const NetworkProfile& net) {
  ProjectionPoint pt;
  pt.workers = workers;
  pt.measured = workers == measured_workers(m);
  const double g = m.gradients_per_epoch;
  pt.steps_per_epoch = static_cast<int64_t>(g / workers);  // rounds of one gradient per worker
  const double per_server = m.push_bytes_per_gradient / double(m.servers);
  pt.comm_seconds = net.seconds(std::llround(2 * g), std::llround(g * per_server));
  // The compute of one gradient (steps rows: a round's gradients are computed in parallel).
  pt.compute_seconds = m.compute_seconds_per_step * double(pt.steps_per_epoch);
  pt.total_seconds = pt.compute_seconds + pt.comm_seconds;
  pt.payload_compression = payload_compression(m.dense_payload_bytes, m.push_bytes_per_gradient);
  return pt;
}

}  // namespace

ProjectionPoint project_point(const RunMeasurement& m, int workers, const NetworkProfile& net,
                              const NetworkProfile* intra) {
  if (workers < 1)
    throw std::invalid_argument("workers must be at least 1 (got " + std::to_string(workers) + ")");
  if (m.servers > 0) return project_parameter_server(m, workers, net);
  ProjectionPoint pt;
  pt.workers = workers;
  pt.measured = workers == m.world_size;
  pt.steps_per_epoch = m.steps_per_epoch * m.world_size / workers;
  const double spe = double(pt.steps_per_epoch);
  auto add_family = [&](const CollectiveMix& mix, const CollectiveCost& c) {
    if (mix.op == "allreduce")
      pt.allreduce_mb += c.bus_bytes / 1e6;
    else if (mix.op == "allgather" || mix.op == "allgatherv")
      pt.allgather_mb += c.bus_bytes / 1e6;
    else if (mix.op == "broadcast")
      pt.broadcast_mb += c.bus_bytes / 1e6;
  };
  CollectiveCost own;  // the run's own communicator, on `net`
  double payload = 0;
  for (const auto& mix : m.collectives) {
    CollectiveCost c = collective_cost(mix, workers);
    add_family(mix, c);
    own.latency_steps += c.latency_steps;
    own.bus_bytes += c.bus_bytes;
    payload += mix.payload_bytes;
  }
  pt.comm_seconds =
      net.seconds(std::llround(own.latency_steps * spe), std::llround(own.bus_bytes * spe));
  // Each level on its own profile: "intra" on the node's, the others between nodes on `net`.
  for (const auto& level : m.levels) {
    const int n = level_ranks_at(m, level, workers);
    for (const auto& mix : level.collectives) {
      add_family(mix, collective_cost(mix, n));
      payload += mix.payload_bytes * mix.share;
    }
    const NetworkProfile& profile =
        level.name != "intra" ? net : (intra ? *intra : find_network_profile(level.profile));
    const CollectiveCost c = level_cost(m, level, workers);
    LevelPoint lp{
        level.name, profile.name, n, c.bus_bytes / 1e6,
        profile.seconds(std::llround(c.latency_steps * spe), std::llround(c.bus_bytes * spe))};
    pt.comm_seconds += lp.comm_seconds;
    pt.levels.push_back(lp);
  }
  const CollectiveCost step = step_cost(m, workers);
  pt.payload_compression = payload_compression(m.dense_payload_bytes, payload);
  pt.wire_ratio = wire_ratio(m.dense_payload_bytes, step.bus_bytes, workers);
  pt.compute_seconds = m.compute_seconds_per_step * spe;
  pt.total_seconds = pt.compute_seconds + pt.comm_seconds;
  return pt;
}

std::vector<Projection> project_runs(const std::vector<RunMeasurement>& subjects,
                                     const std::vector<RunMeasurement>& baselines,
                                     const std::vector<int>& workers, const NetworkProfile& net,
                                     const NetworkProfile* intra) {
  const std::vector<RunMeasurement> dense_runs = average_seeds(baselines);
  std::vector<Projection> out;
  for (const auto& m : average_seeds(subjects)) {
    Projection p;
    p.basis = m;
    p.network = net.name;
    const RunMeasurement* dense = dense_baseline(dense_runs, m);
    if (dense) p.dense_name = dense->name;
    std::vector<int> sizes = {measured_workers(m)};
    for (int w : workers)
      if (std::find(sizes.begin(), sizes.end(), w) == sizes.end()) sizes.push_back(w);
    const ProjectionPoint own = project_point(m, measured_workers(m), net, intra);
    for (int w : sizes) {
      ProjectionPoint pt = project_point(m, w, net, intra);
      if (pt.total_seconds > 0) {
        pt.speedup_vs_measured = own.total_seconds / pt.total_seconds;
        if (dense)
          pt.speedup_vs_dense =
              project_point(*dense, w, net, intra).total_seconds / pt.total_seconds;
      }
      p.points.push_back(pt);
    }
    out.push_back(p);
  }
  return out;
}

std::string render_projection_markdown(const std::vector<Projection>& projections) {
  std::ostringstream s;
  if (projections.empty()) return "";
  const NetworkProfile& net = find_network_profile(projections[0].network);
  s << "# Projected time per epoch on " << net.name << " (α = " << fmt("%g", net.alpha * 1e6)
    << " µs, " << fmt("%g", 8e-9 / net.beta) << " Gb/s)\n\n"
    << "Fixed batch per rank: steps/epoch = measured × P0 / P. Compute per step as measured at P0; "
       "communication: the α–β cost of the collectives each step made (comm_totals), re-costed on "
       "P "
       "ranks. MB columns: bus bytes each rank pushes per step; – where an epoch holds fewer "
       "samples than one global batch. Payload compression: dense fp32 payload ÷ the run's "
       "payload; wire ratio: dense SGD's bus bytes (ring allreduce) ÷ the run's, both at P.\n";
  for (const auto& p : projections) {
    const RunMeasurement& m = p.basis;
    s << "\n## " << m.name << " — " << m.algorithm << ", " << m.model << ", " << m.dataset
      << " (suite " << (m.suite.empty() ? "–" : m.suite) << "), measured on " << m.world_size
      << " ranks, " << m.seeds << (m.seeds == 1 ? " seed" : " seeds") << "\n\n";
    if (m.servers > 0)
      s << "Parameter server: " << m.servers << " server(s) and " << measured_workers(m)
        << " workers measured; P below counts workers. Per epoch "
        << fmt("%.0f", m.gradients_per_epoch) << " gradients, each pushed as "
        << fmt("%.4f", m.push_bytes_per_gradient / 1e6)
        << " MB (headers included), all through the servers' links: α·2G + β·G·push/S per "
           "epoch at every P.\n\n";
    s << "Per step at " << m.world_size << " ranks: compute "
      << fmt("%.2f", 1e3 * m.compute_seconds_per_step) << " ms";
    for (const auto& c : m.collectives)
      s << "; " << c.op << " " << fmt("%.2f", c.calls) << " call(s), "
        << fmt("%.4f", c.payload_bytes / 1e6) << " MB/rank";
    const CollectiveCost own = step_cost(m, static_cast<int>(m.world_size));
    s << ". α–β terms per step from this mix: " << fmt("%.2f", own.latency_steps) << " latencies, "
      << fmt("%.4f", own.bus_bytes / 1e6)
      << " bus MB (steps table: " << fmt("%.2f", m.recorded_latency_steps) << ", "
      << fmt("%.4f", m.recorded_bus_bytes / 1e6) << ").\n\n";
    for (const auto& l : m.levels) {
      s << "Level " << l.name << " (" << l.ranks << " ranks per group at " << m.world_size
        << " ranks, recorded on " << l.profile << "), per rank taking part:";
      for (const auto& c : l.collectives)
        s << " " << c.op << " " << fmt("%.2f", c.calls) << " call(s), "
          << fmt("%.4f", c.payload_bytes / 1e6) << " MB (" << fmt("%.0f", 100 * c.share)
          << "% of ranks);";
      s << "\n";
    }
    if (!m.levels.empty())
      s << "\nEach level is costed on its own profile: intra keeps its group size, the others "
           "grow with P.\n\n";
    const bool ar = uses(p, "allreduce"), ag = uses(p, "allgather"), bc = uses(p, "broadcast");
    s << "| workers | steps/epoch | compute s/epoch | comm s/epoch | total s/epoch |";
    if (ar) s << " allreduce MB/step |";
    if (ag) s << " allgather MB/step |";
    if (bc) s << " broadcast MB/step |";
    for (const auto& l : m.levels)
      s << " " << l.name << " ranks | " << l.name << " MB/step | " << l.name << " s/epoch |";
    s << " payload compression | wire ratio | speed-up vs " << m.world_size << " ranks | vs dense"
      << (p.dense_name.empty() ? "" : " (" + p.dense_name + ")") << " |\n";
    s << "|---:|---:|---:|---:|---:|" << (ar ? "---:|" : "") << (ag ? "---:|" : "")
      << (bc ? "---:|" : "");
    for (size_t i = 0; i < m.levels.size(); ++i) s << "---:|---:|---:|";
    s << "---:|---:|---:|---:|\n";
    for (const auto& pt : p.points) {
      // No step at all: the epoch holds fewer samples than one global batch.
      auto secs = [&](double v) {
        return pt.steps_per_epoch > 0 ? fmt("%.3f", v) : std::string("–");
      };
      s << "| " << pt.workers << (pt.measured ? " (measured)" : "") << " | " << pt.steps_per_epoch
        << " | " << secs(pt.compute_seconds) << " | " << secs(pt.comm_seconds) << " | "
        << secs(pt.total_seconds) << " |";
      if (ar) s << " " << fmt("%.4f", pt.allreduce_mb) << " |";
      if (ag) s << " " << fmt("%.4f", pt.allgather_mb) << " |";
      if (bc) s << " " << fmt("%.4f", pt.broadcast_mb) << " |";
      for (const auto& l : pt.levels)
        s << " " << l.ranks << " | " << fmt("%.4f", l.bus_mb) << " | " << secs(l.comm_seconds)
          << " |";
      s << " " << ratio(pt.payload_compression) << " | " << ratio(pt.wire_ratio) << " | "
        << ratio(pt.speedup_vs_measured) << " | " << ratio(pt.speedup_vs_dense) << " |\n";
    }
  }
  return s.str();
}

std::string render_projection_csv(const std::vector<Projection>& projections) {
  std::ostringstream s;
  s << "run,algorithm,model,dataset,suite,measured_ranks,seeds,network,workers,measured,"
       "steps_per_epoch,compute_s_per_epoch,comm_s_per_epoch,total_s_per_epoch,"
       "allreduce_mb_per_step,allgather_mb_per_step,broadcast_mb_per_step,speedup_vs_measured,"
       "speedup_vs_dense,dense_run,payload_compression,wire_ratio\n";
  for (const auto& p : projections) {
    const RunMeasurement& m = p.basis;
    for (const auto& pt : p.points)
      s << m.name << "," << m.algorithm << "," << m.model << "," << m.dataset << "," << m.suite
        << "," << m.world_size << "," << m.seeds << "," << p.network << "," << pt.workers << ","
        << (pt.measured ? 1 : 0) << "," << pt.steps_per_epoch << "," << secs(pt, pt.compute_seconds)
        << "," << secs(pt, pt.comm_seconds) << "," << secs(pt, pt.total_seconds) << ","
        << fmt("%.6f", pt.allreduce_mb) << "," << fmt("%.6f", pt.allgather_mb) << ","
        << fmt("%.6f", pt.broadcast_mb) << ","
        << (pt.speedup_vs_measured > 0 ? fmt("%.4f", pt.speedup_vs_measured) : "") << ","
        << (pt.speedup_vs_dense > 0 ? fmt("%.4f", pt.speedup_vs_dense) : "") << "," << p.dense_name
        << "," << (pt.payload_compression > 0 ? fmt("%.4f", pt.payload_compression) : "") << ","
        << (pt.wire_ratio > 0 ? fmt("%.4f", pt.wire_ratio) : "") << "\n";
  }
  return s.str();
}

}  // namespace cedar
