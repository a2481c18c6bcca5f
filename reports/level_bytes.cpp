#include "reports/level_bytes.h"

#include <cstdio>
#include <sstream>

#include "reports/number_format.h"
#include "results/comm_queries.h"

namespace cedar {

std::vector<LevelBytes> load_level_bytes(const std::string& db_path, const std::string& suite) {
  ResultsReader db(db_path);
  std::vector<LevelBytes> out;
  for (const LevelTotals& t : read_level_totals(db, suite)) {
    LevelBytes b;
    b.run_id = t.run_id;
    b.name = t.name;
    b.algorithm = t.algorithm;
    b.world_size = t.world_size;
    b.seed = t.seed;
    b.level = t.level;
    b.ranks = t.ranks;
    b.profile = t.profile;
    b.steps = t.steps;
    const double steps = double(b.steps > 0 ? b.steps : 1);
    b.payload_bytes_per_step = double(t.payload_bytes) / steps;
    b.bus_bytes_per_step = double(t.bus_bytes) / steps;
    b.modeled_seconds_per_step = t.modeled_comm_seconds / steps;
    b.total_payload_bytes = t.all_ranks_payload_bytes;
    b.total_bus_bytes = t.all_ranks_bus_bytes;
    out.push_back(b);
  }
  return out;
}

std::string render_level_bytes_markdown(const std::vector<LevelBytes>& rows) {
  if (rows.empty()) return "No run has levels (a hierarchical exchange's intra and inter).\n";
  std::ostringstream s;
  s << "Per step: rank 0 (a node leader), mean over the run's steps. Run totals: every rank. "
       "MB = 1e6 bytes; payload is what a rank contributes, bus what it pushes through its link; "
       "modeled: the α–β time on the level's profile.\n\n"
    << "| run | algorithm | ranks | seed | level | group | profile | payload MB/step | bus MB/step "
       "| modeled ms/step | payload MB (run, all ranks) | bus MB (run, all ranks) |\n"
    << "|---|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|\n";
  for (const auto& b : rows)
    s << "| " << b.name << " | " << b.algorithm << " | " << b.world_size << " | " << b.seed << " | "
      << b.level << " | " << b.ranks << " | " << b.profile << " | "
      << fmt("%.4f", b.payload_bytes_per_step / 1e6) << " | "
      << fmt("%.4f", b.bus_bytes_per_step / 1e6) << " | "
      << fmt("%.3f", 1e3 * b.modeled_seconds_per_step) << " | "
      << fmt("%.3f", double(b.total_payload_bytes) / 1e6) << " | "
      << fmt("%.3f", double(b.total_bus_bytes) / 1e6) << " |\n";
  return s.str();
}

}  // namespace cedar
