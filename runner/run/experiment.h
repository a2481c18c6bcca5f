#pragma once
// Runs one experiment end to end on this process's rank: communicator, data, model, algorithm,
// results record (running → completed / failed / diverged), and the training itself: the trainer
// (runner/train/trainer.h) or the parameter server (runner/ps/run.h).
#include "config/experiment_config.h"
#include "runner/train/run_options.h"

namespace cedar {

// Throws after recording the failure when the run fails.
RunOutcome run_experiment(const ExperimentConfig& cfg, const RunOptions& opts);

}  // namespace cedar
