#include "reports/gap_rounds.h"

#include "results/step_stat_queries.h"

namespace cedar {

GapResult read_gap_result(ResultsReader& db, int64_t run_id, int64_t workers) {
  GapResult out;
  const GapStats gap = read_gap_stats(db, run_id);
  if (!gap.final_gap) return out;
  out.has_gap = true;
  out.final_gap = *gap.final_gap;
  if (gap.first_reached_step)
    out.rounds_to_gap =
        read_uploads_before(db, run_id, static_cast<double>(workers), *gap.first_reached_step);
  return out;
}

}  // namespace cedar
