#include "results/comm_queries.h"

#include <cstdio>

#include "results/run_columns.h"
#include "results/statement.h"

namespace cedar {
namespace {

const char* const kOpTotalsQuery =
    "SELECT op, SUM(calls), SUM(payload_bytes), SUM(CASE WHEN rank = 0 THEN bus_bytes ELSE 0 END), "
    "COUNT(*) FROM comm_totals WHERE run_id = ?1 GROUP BY op ORDER BY op";

const char* const kRunLevelsQuery =
    "SELECT level, MAX(ranks), MAX(profile) FROM step_levels WHERE run_id = ?1 GROUP BY level "
    "ORDER BY level";

// %s: comm_seconds, or NULL in a database written before it was recorded.
const char* const kStepLevelTermsQuery =
    "SELECT step, level, profile, ranks, latency_steps, bus_bytes, %s FROM step_levels "
    "WHERE run_id = ?1 ORDER BY step, level";

const char* const kLevelTotalsQuery = R"SQL(
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

}  // namespace

std::vector<OpTotals> read_op_totals(ResultsReader& db, int64_t run_id) {
  Statement st(db.handle(), db.path(), kOpTotalsQuery);
  st.bind(1, run_id);
  return read_rows(st, [](const Statement& s) {
    return OpTotals{s.text_column(0), s.int_column(1), s.int_column(2), s.int_column(3),
                    s.int_column(4)};
  });
}

std::vector<RunLevel> read_run_levels(ResultsReader& db, int64_t run_id) {
  if (!db.has_table("step_levels")) return {};
  Statement st(db.handle(), db.path(), kRunLevelsQuery);
  st.bind(1, run_id);
  return read_rows(st, [](const Statement& s) {
    return RunLevel{s.text_column(0), s.text_column(2), s.int_column(1)};
  });
}

std::vector<StepLevelTerms> read_step_level_terms(ResultsReader& db, int64_t run_id) {
  if (!db.has_table("step_levels")) return {};
  const bool timed = db.has_column("step_levels", "comm_seconds");
  char query[256];
  std::snprintf(query, sizeof query, kStepLevelTermsQuery, timed ? "comm_seconds" : "NULL");
  Statement st(db.handle(), db.path(), query);
  st.bind(1, run_id);
  return read_rows(st, [](const Statement& s) {
    return StepLevelTerms{s.int_column(0),          s.text_column(1), s.text_column(2),
                          s.int_column(3),          s.int_column(4),  s.int_column(5),
                          s.optional_real_column(6)};
  });
}

std::vector<LevelTotals> read_level_totals(ResultsReader& db, const std::string& suite) {
  if (!db.has_table("step_levels")) return {};
  Statement st(db.handle(), db.path(), kLevelTotalsQuery);
  st.bind(1, suite);
  return read_rows(st, [](const Statement& row) {
    LevelTotals t;
    t.run_id = row.int_column(0);
    t.name = row.text_column(1);
    t.algorithm = row.text_column(2);
    t.world_size = row.int_column(3);
    t.seed = row.int_column(4);
    t.level = row.text_column(5);
    t.ranks = row.int_column(6);
    t.profile = row.text_column(7);
    t.steps = row.int_column(8);
    t.payload_bytes = row.int_column(9);
    t.bus_bytes = row.int_column(10);
    t.modeled_comm_seconds = row.real_column(11);
    t.all_ranks_payload_bytes = row.int_column(12);
    t.all_ranks_bus_bytes = row.int_column(13);
    return t;
  });
}

}  // namespace cedar
