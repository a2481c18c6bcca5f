#include "reports/staleness.h"

#include <cstdio>
#include <sstream>

#include "results/step_stat_queries.h"

namespace cedar {
namespace {

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
  for (const StalenessCount& c : read_staleness_counts(db, suite)) {
    if (out.empty() || out.back().run_id != c.run_id) {
      StalenessRow r;
      r.run_id = c.run_id;
      r.name = c.name;
      r.world_size = c.world_size;
      r.workers = c.workers;
      r.servers = c.servers;
      r.seed = c.seed;
      out.push_back(r);
    }
    out.back().counts[c.staleness] += c.updates;
  }
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
