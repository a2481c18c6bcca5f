#pragma once
// The staleness of a parameter server's updates (`cedar report --staleness`): for each run that
// recorded staleness (step_stats key 'staleness', one value per applied update: the versions the
// server applied between the gradient's pull and its own apply), its distribution. No LibTorch.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cedar {

struct StalenessRow {
  int64_t run_id = 0;
  std::string name;
  int64_t world_size = 0, workers = 0, servers = 0, seed = 0;
  int64_t updates = 0;  // applied updates recorded
  double mean = 0;
  int64_t median = 0, p90 = 0, max = 0;
  std::map<int64_t, int64_t> counts;  // staleness -> updates
};

// Finished runs of `suite` (every suite when empty; the latest of each name, seed and world
// size) with staleness values, in run order.
std::vector<StalenessRow> load_staleness(const std::string& db_path, const std::string& suite);
std::string render_staleness_markdown(const std::vector<StalenessRow>& rows);

}  // namespace cedar
