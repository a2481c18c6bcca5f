#pragma once
// Typed reads of communication: comm_totals (each rank's totals per collective over a run) and
// step_levels (each step's traffic per level of sub-communicators), results/schema.sql.
// A database written before schema version 3 has no step_levels: its level reads are empty.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/results_reader.h"

namespace cedar {

// One collective of run `run_id`, summed over the ranks that made it (comm_totals' op, e.g.
// "allreduce", or "<level>/<op>" for a level's).
struct OpTotals {
  std::string op;
  int64_t calls = 0, payload_bytes = 0;  // Σ over ranks
  int64_t rank0_bus_bytes = 0;           // rank 0's bus bytes (0 when rank 0 made none)
  int64_t ranks = 0;                     // ranks with a row for it
};
// In op order.
std::vector<OpTotals> read_op_totals(ResultsReader& db, int64_t run_id);

// A level of run `run_id`'s sub-communicators: rank 0's group size and network profile (the
// largest recorded over its steps).
struct RunLevel {
  std::string level, profile;
  int64_t ranks = 0;
};
// In level order.
std::vector<RunLevel> read_run_levels(ResultsReader& db, int64_t run_id);

// One step's traffic at one level of run `run_id`'s sub-communicators (step_levels, rank 0).
struct StepLevelTerms {
  int64_t step = 0;
  std::string level, profile;
  int64_t ranks = 0;
  int64_t latency_steps = 0, bus_bytes = 0;
  // Seconds inside the level's communicators (nullopt: written before cedar recorded them).
  std::optional<double> comm_seconds;
};
// In step and level order.
std::vector<StepLevelTerms> read_step_level_terms(ResultsReader& db, int64_t run_id);

// One level of one shown run (results/run_queries.h): rank 0's traffic of that level summed over
// the run's steps, and every rank's from comm_totals' "<level>/<op>" rows (the "<level>/split"
// that formed the communicators left out).
struct LevelTotals {
  int64_t run_id = 0;
  std::string name, algorithm;
  int64_t world_size = 0, seed = 0;
  std::string level, profile;  // the level's network profile (the largest name recorded)
  int64_t ranks = 0;           // rank 0's group size (the largest recorded)
  int64_t steps = 0;           // step rows of the run
  int64_t payload_bytes = 0, bus_bytes = 0;  // Σ over its step_levels rows, rank 0
  double modeled_comm_seconds = 0;           // Σ likewise
  int64_t all_ranks_payload_bytes = 0, all_ranks_bus_bytes = 0;  // comm_totals, every rank
};
// The shown runs of `suite` that have levels, one row per run and level, in run and level order.
std::vector<LevelTotals> read_level_totals(ResultsReader& db, const std::string& suite);

}  // namespace cedar
