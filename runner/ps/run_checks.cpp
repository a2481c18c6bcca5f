// Whether a run can be a parameter-server run, checked before its record is written.
#include <string>

#include "config/params.h"
#include "runner/ps/run.h"

namespace cedar {

void check_parameter_server_run(const ExperimentConfig& cfg, const ParameterServerParams& ps,
                                int world_size, const Model& model) {
  const std::string where = cfg.source.file.empty() ? "the configuration" : cfg.source.file;
  auto fail = [&](const std::string& what) { throw ConfigError(where + ": " + what); };
  if (cfg.train.amp != "off")
    fail("train.amp '" + cfg.train.amp + "': algorithm ps trains in fp32 (use train.amp: off)");
  if (ps.servers >= world_size)
    fail("algorithm.servers " + std::to_string(ps.servers) + " leaves no worker among world size " +
         std::to_string(world_size) + " (servers must be fewer than the ranks)");
  if (ps.upload == "lag" && ps.mode != "bsp")
    fail("algorithm.upload lag with mode " + ps.mode +
         ": LAG's rule is stated for synchronous "
         "rounds (use mode: bsp)");
  if (cfg.train.overlap) fail("train.overlap is not supported with algorithm ps");
  if (cfg.train.fusion != "size")
    fail("train.fusion '" + cfg.train.fusion +
         "' is not supported with algorithm ps (its workers do not exchange buckets)");
  if (!cfg.train.trace.empty())
    fail(
        "train.trace is not supported with algorithm ps (its workers and servers do not record "
        "a timeline)");
  if (cfg.optimizer.name == "adam" || cfg.optimizer.name == "adamw")
    fail("optimizer.name '" + cfg.optimizer.name +
         "': the servers of algorithm ps step with sgd or lars");
  if (cfg.train.device != "cpu")
    fail("train.device '" + cfg.train.device + "': algorithm ps runs on the CPU (backend mpi)");
  const auto params = model.parameters();
  if (static_cast<int64_t>(params.size()) < ps.servers)
    fail("algorithm.servers " + std::to_string(ps.servers) + " for a model of " +
         std::to_string(params.size()) + " parameter tensors: a server would hold nothing");
}

}  // namespace cedar
