#include "results/step_queries.h"

#include "results/run_columns.h"
#include "results/statement.h"

namespace cedar {
namespace {

const char* const kStepTimesQuery =
    "SELECT s.step, s.epoch, s.wall_seconds, " CEDAR_STEP_SHARE
    " FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.run_id = ?1 ORDER BY s.step";

const char* const kStepSecondsQuery =
    "SELECT step, compute_seconds, comm_seconds, latency_steps, bus_bytes FROM steps "
    "WHERE run_id = ?1 ORDER BY step";

const char* const kEvalTimesQuery =
    "SELECT step, wall_seconds FROM evals WHERE run_id = ?1 ORDER BY step";

const char* const kLongestEpochQuery =
    "SELECT COUNT(*) FROM steps WHERE run_id = ?1 GROUP BY epoch ORDER BY 1 DESC LIMIT 1";

// Completed runs only; the latest completed one of each suite, name and seed.
#define CEDAR_LATEST_COMPLETED_RUN                                                           \
  "r.status = 'completed' AND (?1 = '' OR r.suite = ?1) AND r.id = (SELECT MAX(r2.id) FROM " \
  "runs r2 WHERE r2.suite = r.suite AND r2.name = r.name AND r2.seed = r.seed AND "          \
  "r2.status = 'completed')"

const char* const kCompletedEvalsQuery =
    "SELECT r.id, r.name, r.seed, e.step, e.epoch, e.wall_seconds, e.cum_payload_bytes, "
    "e.cum_bus_bytes, e.test_loss, e.test_accuracy, e.train_loss, e.train_accuracy, "
    "e.consensus_distance FROM evals e JOIN runs r ON r.id = e.run_id "
    "WHERE " CEDAR_LATEST_COMPLETED_RUN " ORDER BY r.name, r.seed, e.step";

const char* const kCompletedLossesQuery =
    "SELECT r.id, r.name, r.seed, s.step, s.train_loss FROM steps s JOIN runs r "
    "ON r.id = s.run_id WHERE " CEDAR_LATEST_COMPLETED_RUN " ORDER BY r.name, r.seed, s.step";

const char* const kWindowQuery = R"SQL(
SELECT r.seed, COALESCE(SUM(s.payload_bytes_all * 1.0 / r.world_size), 0),
       COALESCE(SUM(s.bus_bytes), 0), COALESCE(SUM(s.dense_bytes), 0), COUNT(*)
FROM steps s JOIN runs r ON r.id = s.run_id
WHERE r.suite = ?1 AND r.name = ?2 AND r.status = 'completed'
  AND )SQL" CEDAR_LATEST_FINISHED_RUN R"SQL(
  AND s.step >= ?3 AND s.epoch >= ?4
  AND (?5 = 0 OR s.epoch = (SELECT MAX(s2.epoch) FROM steps s2 WHERE s2.run_id = r.id))
GROUP BY r.seed ORDER BY r.seed
)SQL";

}  // namespace

std::vector<StepTime> read_step_times(ResultsReader& db, int64_t run_id) {
  Statement st(db.handle(), db.path(), kStepTimesQuery);
  st.bind(1, run_id);
  return read_rows(st, [](const Statement& s) {
    return StepTime{s.int_column(0), s.int_column(1), s.real_column(2), s.real_column(3)};
  });
}

std::vector<StepSeconds> read_step_seconds(ResultsReader& db, int64_t run_id) {
  Statement st(db.handle(), db.path(), kStepSecondsQuery);
  st.bind(1, run_id);
  return read_rows(st, [](const Statement& s) {
    return StepSeconds{s.int_column(0), s.real_column(1), s.real_column(2), s.int_column(3),
                       s.int_column(4)};
  });
}

std::vector<EvalTime> read_eval_times(ResultsReader& db, int64_t run_id) {
  Statement st(db.handle(), db.path(), kEvalTimesQuery);
  st.bind(1, run_id);
  return read_rows(st, [](const Statement& s) {
    return EvalTime{s.int_column(0), s.real_column(1)};
  });
}

std::optional<int64_t> read_longest_epoch_steps(ResultsReader& db, int64_t run_id) {
  Statement st(db.handle(), db.path(), kLongestEpochQuery);
  st.bind(1, run_id);
  if (!st.next()) return std::nullopt;
  return st.int_column(0);
}

std::vector<EvalPoint> read_completed_evals(ResultsReader& db, const std::string& suite) {
  Statement st(db.handle(), db.path(), kCompletedEvalsQuery);
  st.bind(1, suite);
  return read_rows(st, [](const Statement& row) {
    EvalPoint e;
    e.run_id = row.int_column(0);
    e.name = row.text_column(1);
    e.seed = row.int_column(2);
    e.step = row.int_column(3);
    e.epoch = row.real_column(4);
    e.wall_seconds = row.real_column(5);
    e.cum_payload_bytes = row.int_column(6);
    e.cum_bus_bytes = row.int_column(7);
    e.test_loss = row.real_column(8);
    e.test_accuracy = row.real_column(9);
    e.train_loss = row.optional_real_column(10);
    e.train_accuracy = row.optional_real_column(11);
    e.consensus_distance = row.optional_real_column(12);
    return e;
  });
}

std::vector<LossPoint> read_completed_losses(ResultsReader& db, const std::string& suite) {
  Statement st(db.handle(), db.path(), kCompletedLossesQuery);
  st.bind(1, suite);
  return read_rows(st, [](const Statement& s) {
    return LossPoint{s.int_column(0), s.text_column(1), s.int_column(2), s.int_column(3),
                     s.real_column(4)};
  });
}

std::vector<SeedWindowBytes> read_window_bytes(ResultsReader& db, const std::string& suite,
                                               const std::string& name, const StepWindow& window) {
  Statement st(db.handle(), db.path(), kWindowQuery);
  st.bind(1, suite).bind(2, name).bind(3, window.from_step).bind(4, window.from_epoch);
  st.bind(5, int64_t{window.last_epoch ? 1 : 0});
  return read_rows(st, [](const Statement& s) {
    return SeedWindowBytes{s.int_column(0), s.real_column(1), s.int_column(2), s.int_column(3),
                           s.int_column(4)};
  });
}

}  // namespace cedar
