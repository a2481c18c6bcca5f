#pragma once
// A parameter-server run (algorithm `ps`, algorithms/parameter_server.cpp) on this process's
// rank: servers (ranks 0..S-1) serve their shards, workers train on their shard of the data, and
// rank 0 (server 0) records the run: one step row per applied update (bsp: per round), with its
// staleness, worker and gradient count in step_stats (cumulative bytes per worker: the mean of the
// workers' pushes), and an evaluation of the server-held model at every epoch
// boundary counted in applied updates and at the end. A model's buffers (batch-norm statistics)
// stay with the workers, each updating its own; the evaluated model carries their average
// (runner/ps/worker_buffers.h), and after the run rank 0's model is the final one: the
// server-held parameters and those averaged buffers. CEDAR_HOLD_AFTER_STEP=N
// (runner/train/hold_for_signal.h) holds a server once it has applied N updates, a worker once
// N of its steps are complete. Checkpoints and resume: runner/ps/checkpoint.h.
#include <torch/types.h>

#include <memory>

#include "algorithms/parameter_server.h"
#include "comm/metered_communicator.h"
#include "config/experiment_config.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "results/store.h"
#include "runner/train/checkpoint.h"

namespace cedar {

// Throws ConfigError naming the file and key when the run cannot be a parameter-server run:
// servers >= world size, LAG outside bsp, train.overlap, train.amp, a GPU
// device, fewer parameter tensors than servers.
void check_parameter_server_run(const ExperimentConfig& cfg, const ParameterServerParams& ps,
                                int world_size, const Model& model);

struct PsRunInputs {
  const ExperimentConfig& cfg;
  const ParameterServerParams& ps;
  std::shared_ptr<Model> model;
  const LoadedDataset& data;
  MeteredCommunicator& comm;  // the run's traffic
  Communicator& control;      // unmetered: initial broadcast, step statistics, shards to evaluate
  ResultStore* store;         // rank 0 only
  int64_t run_id = -1;
  torch::Device device = torch::Device(torch::kCPU);
  bool quiet = false;
  const CheckpointDir* checkpoints = nullptr;  // null: train.checkpoint off
  int64_t resume_step = -1;                    // the checkpoint (version) to resume from
};

// Trains to the end (train.epochs or train.max_steps, counted as the steps of the workers
// together: bsp rounds, or workers x steps gradients in ssp / asp). The summary is rank 0's.
// Every rank throws Diverged when a server's parameters or the evaluated model stop being
// finite, and Interrupted after SIGINT / SIGTERM (with a checkpoint when checkpoints are on).
RunSummary run_parameter_server(const PsRunInputs& in);

}  // namespace cedar
