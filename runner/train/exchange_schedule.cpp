#include "runner/train/exchange_schedule.h"

#include <cmath>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "config/known_names.h"

namespace cedar {

int64_t slice_elements(double slice_kb) {
  return static_cast<int64_t>(std::floor(slice_kb * 1000.0 / 4.0));
}

int64_t priority_slice_elements(const TrainConfig& train) {
  return train.schedule == "priority" ? slice_elements(train.slice_kb) : 0;
}

void check_schedule_for(const ExperimentConfig& cfg) {
  if (cfg.train.schedule != "priority") return;
  const AlgorithmInfo& info = find_algorithm(cfg.algorithm);
  if (info.elementwise_exchange) return;
  std::vector<std::string> elementwise;
  for (const AlgorithmInfo& a : algorithm_catalog())
    if (a.elementwise_exchange) elementwise.push_back(a.name);
  throw ConfigError(cfg.source.file +
                    ": train.schedule: priority cuts the buckets into slices, "
                    "and algorithm '" +
                    cfg.algorithm +
                    "' does not treat each gradient element on its own (its compression, "
                    "selection or state is defined over a whole bucket or tensor), so on slices "
                    "it would run a different method; priority scheduling runs " +
                    join_names(elementwise) + " (or use train.schedule: fifo)");
}

}  // namespace cedar
