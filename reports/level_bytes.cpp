#include "reports/level_bytes.h"

#include <cstdio>
#include <sstream>

#include "reports/results_reader.h"

namespace cedar {
namespace {

const char* kLevelBytesQuery = R"SQL(
SELECT r.id, r.name, r.algorithm, r.world_size, r.seed, l.level, MAX(l.ranks), MAX(l.profile),
       (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id),
       SUM(l.payload_bytes), SUM(l.bus_bytes), SUM(l.modeled_comm_seconds),
       (SELECT COALESCE(SUM(c.payload_bytes), 0) FROM comm_totals c WHERE c.run_id = r.id
          AND substr(c.op, 1, length(l.level) + 1) = l.level || '/'
          AND c.op <> l.level || '/split'),
       (SELECT COALESCE(SUM(c.bus_bytes), 0) FROM comm_totals c WHERE c.run_id = r.id
          AND substr(c.op, 1, length(l.level) + 1) = l.level || '/'
          AND c.op <> l.level || '/split')
FROM runs r JOIN step_levels l ON l.run_id = r.id
WHERE (?1 = '' OR r.suite = ?1) AND r.status <> 'running' AND )SQL" CEDAR_LATEST_FINISHED_RUN
                               R"SQL(
GROUP BY r.id, l.level
ORDER BY r.id, l.level
)SQL";

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::vector<LevelBytes> load_level_bytes(const std::string& db_path, const std::string& suite) {
  ResultsReader db(db_path);
  std::vector<LevelBytes> out;
  {
    sqlite3_stmt* st = db.prepare(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'step_levels'");
    const bool has = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
    sqlite3_finalize(st);
    if (!has) return out;  // a database written before levels were recorded
  }
  sqlite3_stmt* st = db.prepare(kLevelBytesQuery);
  sqlite3_bind_text(st, 1, suite.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st) == SQLITE_ROW) {
    LevelBytes b;
    b.run_id = sqlite3_column_int64(st, 0);
    b.name = column_text(st, 1);
    b.algorithm = column_text(st, 2);
    b.world_size = sqlite3_column_int64(st, 3);
    b.seed = sqlite3_column_int64(st, 4);
    b.level = column_text(st, 5);
    b.ranks = sqlite3_column_int64(st, 6);
    b.profile = column_text(st, 7);
    b.steps = sqlite3_column_int64(st, 8);
    const double steps = double(b.steps > 0 ? b.steps : 1);
    b.payload_bytes_per_step = double(sqlite3_column_int64(st, 9)) / steps;
    b.bus_bytes_per_step = double(sqlite3_column_int64(st, 10)) / steps;
    b.modeled_seconds_per_step = sqlite3_column_double(st, 11) / steps;
    b.total_payload_bytes = sqlite3_column_int64(st, 12);
    b.total_bus_bytes = sqlite3_column_int64(st, 13);
    out.push_back(b);
  }
  sqlite3_finalize(st);
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
