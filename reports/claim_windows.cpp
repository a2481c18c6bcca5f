// Byte totals of a suite's runs over a claim's window, from the steps table.
#include <memory>

#include "reports/claims.h"
#include "results/step_queries.h"

namespace cedar {

WindowReader database_window_reader(const std::string& db_path, const std::string& suite) {
  auto db = std::make_shared<ResultsReader>(db_path);
  return [db, suite](const std::string& run, const ClaimWindow& w) {
    std::vector<WindowBytes> out;
    for (const SeedWindowBytes& s :
         read_window_bytes(*db, suite, run, {w.from_step, w.from_epoch, w.last_epoch})) {
      WindowBytes b;
      b.seed = s.seed;
      b.payload_per_rank = s.payload_per_rank;
      b.bus = static_cast<double>(s.bus_bytes);
      b.dense_payload = static_cast<double>(s.dense_bytes);
      b.steps = s.steps;
      if (b.steps > 0) out.push_back(b);
    }
    return out;
  };
}

}  // namespace cedar
