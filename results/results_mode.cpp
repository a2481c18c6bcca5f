#include "results/results_mode.h"

#include <stdexcept>

namespace cedar {

std::string ResolvedResultsMode::explain() const {
  std::string why = filesystem.type +
                    (filesystem.network ? " is shared between hosts" : " is local to this host");
  return name() + " (" + (setting == "auto" ? "auto: " : "as configured; ") + why + ")";
}

ResolvedResultsMode resolve_results_mode(const std::string& setting, const std::string& db_path) {
  if (setting != "auto" && setting != "wal" && setting != "shards")
    throw std::invalid_argument("results mode '" + setting + "': expected auto, wal or shards");
  ResolvedResultsMode r;
  r.setting = setting;
  r.filesystem = filesystem_of(db_path);
  if (setting == "shards" || (setting == "auto" && r.filesystem.network))
    r.mode = ResultsMode::kShards;
  return r;
}

std::string shards_dir(const std::string& db_path) { return db_path + ".shards"; }

std::string checkpoints_dir(const std::string& db_path) { return db_path + ".checkpoints"; }

}  // namespace cedar
