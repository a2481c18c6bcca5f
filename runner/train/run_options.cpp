#include "runner/train/run_options.h"

#include <algorithm>
#include <thread>

#include "results/results_mode.h"
#include "runner/train/communicators.h"

namespace cedar {

std::string checkpoint_root(const ExperimentConfig& cfg, const std::string& db_path) {
  return cfg.train.checkpoint_dir.empty() ? checkpoints_dir(db_path) : cfg.train.checkpoint_dir;
}

std::string checkpoint_folder(const ExperimentConfig& cfg, const std::string& db_path,
                              const std::string& run_uuid) {
  return checkpoint_root(cfg, db_path) + "/run-" + run_uuid;
}

int threads_per_rank(int64_t configured) {
  if (configured > 0) return static_cast<int>(configured);
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, ranks_on_this_node()));
}

}  // namespace cedar
