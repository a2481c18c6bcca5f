#include "results/run_queries.h"

#include "results/run_columns.h"
#include "results/statement.h"

namespace cedar {
namespace {

const char* const kShownRunsQuery = "SELECT " CEDAR_RUN_ROW_COLUMNS R"SQL(
FROM runs r
WHERE (?1 = '' OR r.suite = ?1)
  AND )SQL" CEDAR_LATEST_FINISHED_RUN R"SQL(
ORDER BY r.id
)SQL";

const char* const kRunTotalsQuery = "SELECT " CEDAR_RUN_ROW_COLUMNS R"SQL(,
       (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.payload_bytes_all), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT CAST(ROUND(COALESCE(SUM(s.bus_bytes * )SQL" CEDAR_STEP_SHARE R"SQL(), 0)) AS INTEGER)
        FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.dense_bytes), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.compute_seconds * )SQL" CEDAR_STEP_SHARE R"SQL(), 0)
        FROM steps s WHERE s.run_id = r.id),
       (SELECT CAST(ROUND(COALESCE(SUM(s.latency_steps * )SQL" CEDAR_STEP_SHARE
                                    R"SQL(), 0)) AS INTEGER)
        FROM steps s WHERE s.run_id = r.id),
       (SELECT MIN(e.wall_seconds) FROM evals e
        WHERE e.run_id = r.id AND ?2 > 0 AND e.test_accuracy >= ?2)
FROM runs r
WHERE (?1 = '' OR r.suite = ?1)
  AND )SQL" CEDAR_LATEST_FINISHED_RUN R"SQL(
ORDER BY r.id
)SQL";

const char* const kRunStepSumsQuery = "SELECT " CEDAR_RUN_ROW_COLUMNS R"SQL(,
       (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id),
       (SELECT COUNT(DISTINCT s.epoch) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.compute_seconds), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.latency_steps), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.bus_bytes), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.dense_bytes), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(s.payload_bytes_all), 0) FROM steps s WHERE s.run_id = r.id),
       (SELECT COALESCE(SUM(v.value), 0) FROM step_stats v WHERE v.run_id = r.id
          AND v.key = 'gradients'),
       (SELECT COALESCE(SUM(t.payload_bytes), 0) FROM comm_totals t WHERE t.run_id = r.id
          AND t.rank < COALESCE(r.servers, 0) AND t.op IN ('send', 'sendrecv'))
FROM runs r
WHERE CASE WHEN ?2 > 0 THEN r.id = ?2
      ELSE (?1 = '' OR r.suite = ?1) AND r.status = 'completed'
           AND )SQL" CEDAR_LATEST_FINISHED_RUN R"SQL(
      END
ORDER BY r.id
)SQL";

const char* const kTimeSpanQuery = R"SQL(
SELECT COUNT(*), MIN(r.start_time), MAX(r.end_time), SUM(r.wall_seconds)
FROM runs r
WHERE (?1 = '' OR r.suite = ?1) AND r.status <> 'running'
  AND )SQL" CEDAR_LATEST_FINISHED_RUN R"SQL(
)SQL";

}  // namespace

RunRow read_run_row(const Statement& st) {
  RunRow r;
  r.id = st.int_column(0);
  r.suite = st.text_column(1);
  r.name = st.text_column(2);
  r.algorithm = st.text_column(3);
  r.model = st.text_column(4);
  r.dataset = st.text_column(5);
  r.world_size = st.int_column(6);
  r.seed = st.int_column(7);
  r.config = st.text_column(8);
  r.config_hash = st.text_column(9);
  r.code_version = st.text_column(10);
  r.host = st.text_column(11);
  r.backend = st.text_column(12);
  r.network = st.text_column(13);
  r.threads = st.int_column(14);
  r.parameters = st.int_column(15);
  r.start_time = st.text_column(16);
  r.end_time = st.optional_text_column(17);
  r.status = st.text_column(18);
  r.error = st.optional_text_column(19);
  r.final_test_accuracy = st.optional_real_column(20);
  r.best_test_accuracy = st.optional_real_column(21);
  r.wall_seconds = st.optional_real_column(22);
  r.total_payload_bytes = st.optional_int_column(23);
  r.total_bus_bytes = st.optional_int_column(24);
  r.pid = st.optional_int_column(25);
  r.heartbeat = st.optional_real_column(26);
  r.effective_momentum = st.optional_real_column(27);
  r.provenance = st.optional_text_column(28);
  r.uuid = st.optional_text_column(29);
  r.attempt = st.int_column(30);
  r.results_mode = st.optional_text_column(31);
  r.filesystem = st.optional_text_column(32);
  r.workers = st.optional_int_column(33);
  r.servers = st.optional_int_column(34);
  return r;
}

std::vector<RunRow> read_shown_runs(ResultsReader& db, const std::string& suite) {
  Statement st(db.handle(), db.path(), kShownRunsQuery);
  st.bind(1, suite);
  return read_rows(st, read_run_row);
}

namespace {

// A row of kRunTotalsQuery: the run's columns, then its totals.
RunTotals read_run_totals_row(const Statement& st) {
  constexpr int c = kRunRowColumnCount;
  RunTotals t;
  t.run = read_run_row(st);
  t.steps = st.int_column(c);
  t.payload_bytes_all = st.int_column(c + 1);
  t.bus_bytes = st.int_column(c + 2);
  t.dense_bytes = st.int_column(c + 3);
  t.compute_seconds = st.real_column(c + 4);
  t.latency_steps = st.int_column(c + 5);
  t.seconds_to_target = st.optional_real_column(c + 6);
  return t;
}

// A row of kRunStepSumsQuery: the run's columns, then its sums over steps.
RunStepSums read_run_step_sums_row(const Statement& st) {
  constexpr int c = kRunRowColumnCount;
  RunStepSums m;
  m.run = read_run_row(st);
  m.steps = st.int_column(c);
  m.epochs = st.int_column(c + 1);
  m.compute_seconds = st.real_column(c + 2);
  m.latency_steps = st.int_column(c + 3);
  m.bus_bytes = st.int_column(c + 4);
  m.dense_bytes = st.int_column(c + 5);
  m.payload_bytes_all = st.int_column(c + 6);
  m.gradients = st.real_column(c + 7);
  m.server_send_payload_bytes = st.int_column(c + 8);
  return m;
}

}  // namespace

std::vector<RunTotals> read_run_totals(ResultsReader& db, const std::string& suite,
                                       double target_accuracy) {
  Statement st(db.handle(), db.path(), kRunTotalsQuery);
  st.bind(1, suite).bind(2, target_accuracy);
  return read_rows(st, read_run_totals_row);
}

std::vector<RunStepSums> read_run_step_sums(ResultsReader& db, const std::string& suite,
                                            int64_t run_id) {
  Statement st(db.handle(), db.path(), kRunStepSumsQuery);
  st.bind(1, suite).bind(2, run_id);
  return read_rows(st, read_run_step_sums_row);
}

RunTimeSpan read_run_time_span(ResultsReader& db, const std::string& suite) {
  Statement st(db.handle(), db.path(), kTimeSpanQuery);
  st.bind(1, suite);
  RunTimeSpan t;
  if (st.next()) {
    t.runs = st.int_column(0);
    t.first_start = st.optional_text_column(1);
    t.last_end = st.optional_text_column(2);
    t.run_seconds = st.optional_real_column(3);
  }
  return t;
}

}  // namespace cedar
