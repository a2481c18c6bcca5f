#pragma once
// What a run is asked for and what it gives back (runner/run/experiment.h runs it), and where its
// checkpoints go: shared by the trainer, the parameter server and the run's record.
#include <cstdint>
#include <string>

#include "config/experiment_config.h"

namespace cedar {

struct RunOptions {
  std::string db_path = "results/cedar.db";
  bool quiet = false;
  // Continue the latest run of this configuration from its checkpoint when that run failed
  // (else start a new run).
  bool resume = false;
  // auto, wal or shards (results/results_mode.h); empty: the configuration's results.mode.
  std::string results_mode;
};

struct RunOutcome {
  int64_t run_id = -1;  // on rank 0: the run's id in `results_path`
  std::string uuid;
  std::string results_path;  // on rank 0: the main database (WAL) or the run's shard
  std::string status;
  double final_test_accuracy = 0;
  double wall_seconds = 0;
  int64_t total_payload_bytes = 0;
  int world_size = 1;
  int64_t resumed_from_step = -1;  // -1: a fresh run
  // What the accuracy and the payload are of: the ranks' averaged model and rank 0's traffic, or
  // (parameter server) the server-held model and the mean worker's pushes.
  std::string evaluated_model = "averaged model";
  std::string payload_of = "rank 0";
};

// Where a run's checkpoint folders go: train.checkpoint_dir, else <db>.checkpoints.
std::string checkpoint_root(const ExperimentConfig& cfg, const std::string& db_path);
// Checkpoint folder of the run with this uuid: <train.checkpoint_dir or
// <db>.checkpoints>/run-<uuid> (a requeued task on another host finds it by the uuid alone).
std::string checkpoint_folder(const ExperimentConfig& cfg, const std::string& db_path,
                              const std::string& run_uuid);

// Threads per rank: configured, else cores / ranks on this node (at least 1).
int threads_per_rank(int64_t configured);

}  // namespace cedar
