#include "reports/staleness.h"

#include <cstdio>
#include <sstream>

#include "reports/results_reader.h"

namespace cedar {
namespace {

const char* kStalenessQuery = R"SQL(
SELECT r.id, r.name, r.world_size, COALESCE(r.workers, r.world_size), COALESCE(r.servers, 0),
       r.seed, CAST(v.value AS INTEGER), COUNT(*)
FROM runs r JOIN step_stats v ON v.run_id = r.id AND v.key = 'staleness'
WHERE (?1 = '' OR r.suite = ?1) AND r.status <> 'running' AND )SQL" CEDAR_LATEST_FINISHED_RUN
                              R"SQL(
GROUP BY r.id, CAST(v.value AS INTEGER)
ORDER BY r.id, CAST(v.value AS INTEGER)
)SQL";

// The smallest staleness whose cumulative count reaches fraction q of the updates.
int64_t quantile(const std::map<int64_t, int64_t>& counts, int64_t total, double q) {
  int64_t seen = 0;
  for (const auto& [s, n] : counts) {
    seen += n;
    if (double(seen) >= q * double(total)) return s;
  }
  return counts.empty() ? 0 : counts.rbegin()->first;
}

}  // namespace

std::vector<StalenessRow> load_staleness(const std::string& db_path, const std::string& suite) {
  ResultsReader db(db_path);
  std::vector<StalenessRow> out;
  sqlite3_stmt* st = db.prepare(kStalenessQuery);
  sqlite3_bind_text(st, 1, suite.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const int64_t id = sqlite3_column_int64(st, 0);
    if (out.empty() || out.back().run_id != id) {
      StalenessRow r;
      r.run_id = id;
      r.name = column_text(st, 1);
      r.world_size = sqlite3_column_int64(st, 2);
      r.workers = sqlite3_column_int64(st, 3);
      r.servers = sqlite3_column_int64(st, 4);
      r.seed = sqlite3_column_int64(st, 5);
      out.push_back(r);
    }
    out.back().counts[sqlite3_column_int64(st, 6)] += sqlite3_column_int64(st, 7);
  }
  sqlite3_finalize(st);
  for (auto& r : out) {
    double sum = 0;
    for (const auto& [s, n] : r.counts) {
      r.updates += n;
      sum += double(s) * double(n);
    }
    r.mean = sum / double(r.updates > 0 ? r.updates : 1);
    r.median = quantile(r.counts, r.updates, 0.5);
    r.p90 = quantile(r.counts, r.updates, 0.9);
    r.max = r.counts.empty() ? 0 : r.counts.rbegin()->first;
  }
  return out;
}

std::string render_staleness_markdown(const std::vector<StalenessRow>& rows) {
  if (rows.empty()) return "No run recorded staleness (only parameter-server runs do).\n";
  std::ostringstream s;
  s << "Staleness of each applied update: the versions the server applied between the "
       "gradient's pull and its own apply (bsp: 0). Distribution: staleness x updates.\n\n"
    << "| run | ranks | workers | servers | seed | updates | mean | median | p90 | max | "
       "distribution |\n"
    << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& r : rows) {
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.2f", r.mean);
    std::string dist;
    for (const auto& [st, n] : r.counts)
      dist += (dist.empty() ? "" : " ") + std::to_string(st) + "x" + std::to_string(n);
    s << "| " << r.name << " | " << r.world_size << " | " << r.workers << " | " << r.servers
      << " | " << r.seed << " | " << r.updates << " | " << mean << " | " << r.median << " | "
      << r.p90 << " | " << r.max << " | " << dist << " |\n";
  }
  return s.str();
}

}  // namespace cedar
