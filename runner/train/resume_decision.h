#pragma once
// Whether a run continues a failed run of the same configuration from that run's checkpoint
// (`cedar run --resume`) or starts a new one.
#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "config/experiment_config.h"
#include "results/store.h"
#include "runner/train/experiment.h"

namespace cedar {

struct ResumeDecision {
  int64_t run_id = -1;  // the run to continue (-1: a new run)
  int64_t step = -1;    // steps its latest checkpoint holds (-1: a new run)
};

// Collective on `control`: rank 0, the one holding `store` (null elsewhere), decides and every
// rank learns the decision. Resuming needs opts.resume, train.checkpoint, a failed run with
// this `fingerprint` and a complete checkpoint of it; that run is then reopened at its step.
ResumeDecision decide_resume(ResultStore* store, const ExperimentConfig& cfg,
                             const RunOptions& opts, const std::string& fingerprint, int world_size,
                             Communicator& control);

}  // namespace cedar
