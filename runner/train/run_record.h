#pragma once
// The record a new run gets in the results database: what runs (configuration, its fingerprint,
// the code version) and where and how (host, backend, threads, provenance of the measurements).
#include <torch/types.h>

#include <string>

#include "algorithms/algorithm.h"
#include "comm/communicator.h"
#include "config/experiment_config.h"
#include "models/model.h"
#include "results/store.h"

namespace cedar {

// `resolved_yaml` and `fingerprint` describe the configuration as run; `backend` carries the
// algorithm's traffic; `device` is where the model trains.
RunRecord make_run_record(const ExperimentConfig& cfg, const std::string& resolved_yaml,
                          const std::string& fingerprint, const Communicator& backend, int threads,
                          torch::Device device, const Model& model, const Algorithm& algorithm);

}  // namespace cedar
