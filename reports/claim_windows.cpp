// Byte totals of a suite's runs over a claim's window, from the steps table.
#include <memory>

#include "reports/claims.h"
#include "reports/results_reader.h"

namespace cedar {
namespace {

// Steps of the latest completed run of each seed of `name` in the window, seed by seed: a step
// number floor, an epoch floor, or (last_epoch) each run's own last epoch.
const char* const kWindowQuery = R"SQL(
SELECT COALESCE(SUM(s.payload_bytes_all * 1.0 / r.world_size), 0), COALESCE(SUM(s.bus_bytes), 0),
       COALESCE(SUM(s.dense_bytes), 0), COUNT(*), r.seed
FROM steps s JOIN runs r ON r.id = s.run_id
WHERE r.suite = ?1 AND r.name = ?2 AND r.status = 'completed'
  AND )SQL" CEDAR_LATEST_FINISHED_RUN R"SQL(
  AND s.step >= ?3 AND s.epoch >= ?4
  AND (?5 = 0 OR s.epoch = (SELECT MAX(s2.epoch) FROM steps s2 WHERE s2.run_id = r.id))
GROUP BY r.seed ORDER BY r.seed
)SQL";

}  // namespace

WindowReader database_window_reader(const std::string& db_path, const std::string& suite) {
  auto db = std::make_shared<ResultsReader>(db_path);
  return [db, suite](const std::string& run, const ClaimWindow& w) {
    sqlite3_stmt* st = db->prepare(kWindowQuery);
    sqlite3_bind_text(st, 1, suite.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, run.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, w.from_step);
    sqlite3_bind_int64(st, 4, w.from_epoch);
    sqlite3_bind_int(st, 5, w.last_epoch ? 1 : 0);
    std::vector<WindowBytes> out;
    while (sqlite3_step(st) == SQLITE_ROW) {
      WindowBytes b;
      b.payload_per_rank = sqlite3_column_double(st, 0);
      b.bus = sqlite3_column_double(st, 1);
      b.dense_payload = sqlite3_column_double(st, 2);
      b.steps = sqlite3_column_int64(st, 3);
      b.seed = sqlite3_column_int64(st, 4);
      if (b.steps > 0) out.push_back(b);
    }
    sqlite3_finalize(st);
    return out;
  };
}

}  // namespace cedar
