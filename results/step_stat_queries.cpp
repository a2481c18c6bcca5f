#include "results/step_stat_queries.h"

#include "results/run_columns.h"
#include "results/statement.h"

namespace cedar {
namespace {

const char* const kGapQuery = R"SQL(
SELECT (SELECT value FROM step_stats WHERE run_id = ?1 AND key = 'gap' ORDER BY step DESC LIMIT 1),
       (SELECT MIN(step) FROM step_stats WHERE run_id = ?1 AND key = 'gap_reached')
)SQL";

const char* const kUploadsQuery = R"SQL(
SELECT COALESCE(SUM(COALESCE(u.value, ?2)), 0)
FROM steps s LEFT JOIN step_stats u ON u.run_id = s.run_id AND u.step = s.step AND u.key = 'uploads'
WHERE s.run_id = ?1 AND s.step < ?3
)SQL";

const char* const kStalenessQuery = R"SQL(
SELECT r.id, r.name, r.world_size, COALESCE(r.workers, r.world_size), COALESCE(r.servers, 0),
       r.seed, CAST(v.value AS INTEGER), COUNT(*)
FROM runs r JOIN step_stats v ON v.run_id = r.id AND v.key = 'staleness'
WHERE (?1 = '' OR r.suite = ?1) AND r.status <> 'running' AND )SQL" CEDAR_LATEST_FINISHED_RUN
                                    R"SQL(
GROUP BY r.id, CAST(v.value AS INTEGER)
ORDER BY r.id, CAST(v.value AS INTEGER)
)SQL";

const char* const kOverlapQuery = R"SQL(
SELECT r.id, r.name, r.world_size, r.seed, e.step, e.value, h.value
FROM runs r
JOIN step_stats e ON e.run_id = r.id AND e.key = 'overlap_exchange_seconds'
JOIN step_stats h ON h.run_id = r.id AND h.step = e.step AND h.key = 'overlap_hidden_seconds'
WHERE (?1 = '' OR r.suite = ?1) AND r.status <> 'running' AND )SQL" CEDAR_LATEST_FINISHED_RUN
                                  R"SQL(
ORDER BY r.id, e.step
)SQL";

}  // namespace

GapStats read_gap_stats(ResultsReader& db, int64_t run_id) {
  Statement st(db.handle(), db.path(), kGapQuery);
  st.bind(1, run_id);
  GapStats out;
  if (st.next()) {
    out.final_gap = st.optional_real_column(0);
    out.first_reached_step = st.optional_int_column(1);
  }
  return out;
}

double read_uploads_before(ResultsReader& db, int64_t run_id, double default_uploads,
                           int64_t before_step) {
  Statement st(db.handle(), db.path(), kUploadsQuery);
  st.bind(1, run_id).bind(2, default_uploads).bind(3, before_step);
  return st.next() ? st.real_column(0) : 0;
}

std::vector<StalenessCount> read_staleness_counts(ResultsReader& db, const std::string& suite) {
  Statement st(db.handle(), db.path(), kStalenessQuery);
  st.bind(1, suite);
  std::vector<StalenessCount> out;
  while (st.next())
    out.push_back({st.int_column(0), st.text_column(1), st.int_column(2), st.int_column(3),
                   st.int_column(4), st.int_column(5), st.int_column(6), st.int_column(7)});
  return out;
}

std::vector<OverlapStep> read_overlap_steps(ResultsReader& db, const std::string& suite) {
  Statement st(db.handle(), db.path(), kOverlapQuery);
  st.bind(1, suite);
  std::vector<OverlapStep> out;
  while (st.next())
    out.push_back({st.int_column(0), st.text_column(1), st.int_column(2), st.int_column(3),
                   st.int_column(4), st.real_column(5), st.real_column(6)});
  return out;
}

}  // namespace cedar
