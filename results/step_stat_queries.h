#pragma once
// Typed reads of step_stats (results/schema.sql), the values an algorithm reports per step: a
// full-batch run's optimality gap, LAG's uploads, a parameter server's staleness, the exchange
// time train.overlap hid behind backward.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/results_reader.h"

namespace cedar {

// A full-batch run's gap f(θ_k) − f*: the value of stat 'gap' at its last step that has one
// (nullopt: the run recorded no gap), and the first step with stat 'gap_reached' (nullopt: none).
struct GapStats {
  std::optional<double> final_gap;
  std::optional<int64_t> first_reached_step;
};
GapStats read_gap_stats(ResultsReader& db, int64_t run_id);

// Σ over run `run_id`'s step rows before step `before_step` of stat 'uploads', a row without it
// counting `default_uploads`; 0 when there is no such row.
double read_uploads_before(ResultsReader& db, int64_t run_id, double default_uploads,
                           int64_t before_step);

// How many of a run's applied updates had one staleness (stat 'staleness', cast to an integer).
struct StalenessCount {
  int64_t run_id = 0;
  std::string name;
  int64_t world_size = 0;
  int64_t workers = 0;  // runs.workers; world_size where NULL
  int64_t servers = 0;  // runs.servers; 0 where NULL
  int64_t seed = 0;
  int64_t staleness = 0, updates = 0;
};
// For the shown runs of `suite` (results/run_queries.h) that recorded staleness: one row per run
// and staleness, in order of run id and staleness.
std::vector<StalenessCount> read_staleness_counts(ResultsReader& db, const std::string& suite);

// One step of a run with train.overlap: its exchanges' time and the part of it backward hid
// (stats 'overlap_exchange_seconds' and 'overlap_hidden_seconds', runner/train/exchange_overlap.h).
struct OverlapStep {
  int64_t run_id = 0;
  std::string name;
  int64_t world_size = 0, seed = 0;
  int64_t step = 0;
  double exchange_seconds = 0, hidden_seconds = 0;
};
// For the shown runs of `suite` (every suite when empty; the latest finished run of each name,
// seed and world size) that recorded both: one row per step, in order of run id and step.
std::vector<OverlapStep> read_overlap_steps(ResultsReader& db, const std::string& suite);

}  // namespace cedar
