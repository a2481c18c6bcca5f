#pragma once
// Bytes per level of a hierarchical exchange (`cedar report --levels`): for each run whose steps
// have levels (step_levels), each level's traffic per step on rank 0 (a node leader) and over the
// whole run summed over every rank (comm_totals' "<level>/<op>" rows), with its modeled time on
// the level's own network profile. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

namespace cedar {

struct LevelBytes {
  int64_t run_id = 0;
  std::string name, algorithm;
  int64_t world_size = 0, seed = 0;
  std::string level;    // "intra", "inter"
  int64_t ranks = 0;    // rank 0's group size at this level
  std::string profile;  // the level's network profile
  int64_t steps = 0;    // steps of the run
  // Per step, rank 0 (mean over the run's steps; steps without traffic of the level count 0).
  double payload_bytes_per_step = 0, bus_bytes_per_step = 0, modeled_seconds_per_step = 0;
  // Whole run, every rank (comm_totals; forming the communicators, split, left out).
  int64_t total_payload_bytes = 0, total_bus_bytes = 0;
};

// Finished runs of `suite` (every suite when empty; the latest of each name, seed and world
// size), one row per run and level, in run and level order. Empty for databases without levels.
std::vector<LevelBytes> load_level_bytes(const std::string& db_path, const std::string& suite);
std::string render_level_bytes_markdown(const std::vector<LevelBytes>& rows);

}  // namespace cedar
