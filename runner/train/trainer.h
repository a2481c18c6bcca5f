#pragma once
// One training run: data-parallel steps through an Algorithm, metrics into the results store.
#include <torch/types.h>

#include <memory>

#include "algorithms/algorithm.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "results/store.h"
#include "runner/train/checkpoint.h"
#include "comm/metered_communicator.h"
#include "comm/network_model.h"
#include "config/experiment_config.h"

namespace cedar {

class Optimizer;

// Seconds on a monotonic clock (differences only).
double monotonic_seconds();

// A run whose loss or update became NaN/Inf: recorded with status 'diverged'.
class Diverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A run stopped by SIGINT/SIGTERM.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Trainer {
 public:
  // `comm` carries the algorithm's traffic (metered); `control` (unmetered) carries the harness's
  // own bookkeeping: initial broadcast, step statistics, evaluation sums. `store` is null on
  // ranks other than 0.
  Trainer(const ExperimentConfig& cfg, std::shared_ptr<Model> model, const LoadedDataset& data,
          std::unique_ptr<Algorithm> algorithm, MeteredCommunicator& comm, Communicator& control,
          ResultStore* store, int64_t run_id, torch::Device device, bool quiet);

  ~Trainer();

  // Checkpoints go to `dir` (null: none); with resume_step >= 0 training continues from that
  // checkpoint. Call before run().
  void set_checkpoints(const CheckpointDir* dir, int64_t resume_step);

  // Trains to the end (epochs, max_steps or target accuracy). Throws Diverged, Interrupted (after
  // writing a checkpoint when they are on), or the error that stopped it.
  RunSummary run();

 private:
  struct StepStats {
    double loss_sum = 0, correct = 0, count = 0;
    double compute = 0, comm = 0;
    int64_t steps = 0;
  };
  void broadcast_initial_state();
  void evaluate_and_log(double epoch, const StepStats& epoch_stats);
  // Name of the first parameter whose update direction holds NaN/Inf, as an index + 1 (0: none).
  double first_nonfinite_update() const;
  // Checkpoints (runner/train/trainer_checkpoint.cpp): every rank writes, then rank 0 commits.
  void save_checkpoint(const LoaderPosition& pos, const StepStats& es);
  // Restores the state of checkpoint resume_step_; returns the loader position and epoch stats.
  LoaderPosition restore_checkpoint(StepStats& es);

  const ExperimentConfig& cfg_;
  std::shared_ptr<Model> model_;
  const LoadedDataset& data_;
  std::unique_ptr<Algorithm> algorithm_;
  MeteredCommunicator& comm_;
  Communicator& control_;
  ResultStore* store_;
  int64_t run_id_;
  torch::Device device_;
  bool quiet_;
  NetworkProfile network_;

  std::vector<NamedTensor> params_, buffers_;
  std::vector<GradBucket> buckets_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<ShardedLoader> loader_;
  const CheckpointDir* checkpoints_ = nullptr;
  int64_t resume_step_ = -1;
  TensorMap checkpoint_state_;  // restored state not yet handed over (the algorithm's part)
  int64_t step_ = 0;
  int64_t cum_payload_ = 0, cum_bus_ = 0, dense_bytes_ = 0;
  double start_ = 0;
  double best_accuracy_ = 0, last_accuracy_ = 0;
  bool reached_target_ = false;
};

}  // namespace cedar
