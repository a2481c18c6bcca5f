#pragma once
// One training run: data-parallel steps through an Algorithm, metrics into the results store.
#include <torch/types.h>

#include <memory>

#include "algorithms/algorithm.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "results/store.h"
#include "runner/comm/metered_communicator.h"
#include "runner/comm/network_model.h"
#include "runner/config.h"

namespace cedar {

// A run whose loss became NaN/Inf: recorded with status 'diverged'.
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

  // Trains to the end (epochs, max_steps or target accuracy). Throws Diverged, Interrupted, or
  // the error that stopped it.
  RunSummary run();

 private:
  struct StepStats;
  void broadcast_initial_state();
  void evaluate_and_log(double epoch, const StepStats& epoch_stats);
  void check_interrupted() const;

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
  int64_t step_ = 0;
  int64_t cum_payload_ = 0, cum_bus_ = 0, dense_bytes_ = 0;
  double start_ = 0;
  double best_accuracy_ = 0, last_accuracy_ = 0;
  bool reached_target_ = false;
};

}  // namespace cedar
