#include "reports/gap_rounds.h"

namespace cedar {
namespace {

const char* const kGapQuery = R"SQL(
SELECT (SELECT value FROM step_stats WHERE run_id = ?1 AND key = 'gap' ORDER BY step DESC LIMIT 1),
       (SELECT MIN(step) FROM step_stats WHERE run_id = ?1 AND key = 'gap_reached')
)SQL";

const char* const kRoundsQuery = R"SQL(
SELECT COALESCE(SUM(COALESCE(u.value, ?2)), 0)
FROM steps s LEFT JOIN step_stats u ON u.run_id = s.run_id AND u.step = s.step AND u.key = 'uploads'
WHERE s.run_id = ?1 AND s.step < ?3
)SQL";

}  // namespace

GapResult read_gap_result(ResultsReader& db, int64_t run_id, int64_t workers) {
  GapResult out;
  sqlite3_stmt* st = db.prepare(kGapQuery);
  sqlite3_bind_int64(st, 1, run_id);
  int64_t reached = -1;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
    out.has_gap = true;
    out.final_gap = sqlite3_column_double(st, 0);
    if (sqlite3_column_type(st, 1) != SQLITE_NULL) reached = sqlite3_column_int64(st, 1);
  }
  sqlite3_finalize(st);
  if (reached < 0) return out;
  st = db.prepare(kRoundsQuery);
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_double(st, 2, static_cast<double>(workers));
  sqlite3_bind_int64(st, 3, reached);
  if (sqlite3_step(st) == SQLITE_ROW) out.rounds_to_gap = sqlite3_column_double(st, 0);
  sqlite3_finalize(st);
  return out;
}

}  // namespace cedar
