#pragma once
// One training run: data-parallel steps through an Algorithm, metrics into the results store.
#include <torch/types.h>

#include <memory>
#include <optional>

#include "algorithms/algorithm.h"
#include "comm/collective_watchdog.h"
#include "comm/metered_communicator.h"
#include "comm/network_model.h"
#include "comm/run_network_profiles.h"
#include "config/experiment_config.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "results/store.h"
#include "runner/train/checkpoint.h"
#include "runner/train/step_agreement.h"
#include "runner/train/step_recorder.h"

namespace cedar {

class BackwardOverlap;
struct EvalResult;
class LossScaler;
class Optimizer;
class StepTrace;
class Timeline;

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
  // `profiles`: the run's network profiles (run_network_profiles(cfg), read where the run
  // starts), on which each step's traffic is modeled. `comm` carries the algorithm's traffic
  // (metered); `control` (unmetered) carries the harness's own bookkeeping: initial broadcast,
  // step statistics, evaluation sums. `store` is null on ranks other than 0.
  Trainer(const ExperimentConfig& cfg, const RunNetworkProfiles& profiles,
          std::shared_ptr<Model> model, const LoadedDataset& data,
          std::unique_ptr<Algorithm> algorithm, MeteredCommunicator& comm, Communicator& control,
          ResultStore* store, int64_t run_id, torch::Device device, bool quiet);

  ~Trainer();

  // Checkpoints go to `dir` (null: none); with resume_step >= 0 training continues from that
  // checkpoint. Call before run().
  void set_checkpoints(const CheckpointDir* dir, int64_t resume_step);
  // The watchdog of the run's operations (null: none) learns the step each one belongs to.
  void set_watchdog(CollectiveWatchdog* dog) { watchdog_ = dog; }

  // Trains to the end (epochs, max_steps or target accuracy). Throws Diverged, Interrupted (after
  // writing a checkpoint when they are on), or the error that stopped it.
  RunSummary run();

 private:
  // One rank's step before the ranks agree on it.
  struct LocalStep {
    StepReport report;
    CommCounters comm;                           // this rank's metered traffic in the step
    std::map<std::string, CommCounters> levels;  // its part on each level of sub-communicators
    double compute_seconds = 0;
    // That traffic's time: each level's on its profile (level_profile below), the
    // rest on network.profile.
    double modeled_comm_seconds = 0;
    // fp16 (train.amp): the loss scale of the step, and whether the step was skipped because a
    // rank's gradients held inf/NaN (the same on every rank: no exchange, no update).
    double loss_scale = 0;
    bool skipped = false;
  };

  // Before the first step (runner/train/trainer.cpp).
  void broadcast_initial_state();
  void build_optimizer();
  // The loader, the steps per epoch and the learning-rate schedule's constants.
  void build_loader();
  // Restores checkpoint resume_step_ when there is one (the recorder's totals with it) and sets
  // the algorithm up; returns where the loader continues.
  LoaderPosition start_or_resume();

  // The training loop (runner/train/trainer.cpp).
  void run_epoch(int64_t epoch, int64_t first_batch, BackwardOverlap* overlap);
  // After step_ is complete: evaluation within the epoch, a requested stop, a periodic
  // checkpoint, the tests' hold. True when max_steps is reached (the epoch ends there).
  bool end_of_step(int64_t epoch, int64_t batch, int stop);
  bool step_limit_reached() const;
  // Rank 0's epoch line; `train_seconds`: the epoch's wall-clock less its evaluations.
  void log_epoch(int64_t epoch, double train_seconds) const;
  void evaluate_and_log(double epoch);

  // One step (runner/train/trainer_step.cpp).
  StepContext step_context(int64_t epoch, int64_t batch) const;
  // Forward, backward, the algorithm's exchange and the optimizer step on this rank.
  LocalStep train_step(const Batch& batch, StepContext& ctx, BackwardOverlap* overlap);
  // The first parameter whose update direction holds NaN/Inf, as an index + 1 (0: none).
  int64_t first_nonfinite_update() const;
  // fp16: unscales the buckets' gradients; true when the ranks agree to skip the step.
  bool unscale_and_agree_to_skip();
  // Throws Diverged when any rank's update or the summed loss is not finite; with fp16 loss
  // scaling, when a step is skipped at a loss scale of kDivergedLossScale or less.
  void check_finite(const StepAgreement& agreed, const LocalStep& local) const;
  // The step in the recorder's totals and, on rank 0, its row in the results store.
  void record_step(int64_t epoch, const StepContext& ctx, const LocalStep& local,
                   const StepAgreement& agreed);

  // Tensor fusion from the network model (runner/train/trainer_fusion.cpp): train.fusion's
  // buckets from backward's gradient times, measured before the first step, or from a checkpoint.
  void choose_fusion();
  std::vector<double> measure_gradient_times();
  void use_fusion_groups(const std::vector<int64_t>& groups);
  void save_fusion(TensorMap& state) const;
  // True when the buckets (and so the optimizer's gradients) were rebuilt.
  bool restore_fusion(const TensorMap& state);

  // Checkpoints (runner/train/trainer_checkpoint.cpp): every rank writes, then rank 0 commits.
  void save_checkpoint(const LoaderPosition& pos);
  // Restores the state of checkpoint resume_step_; returns the loader position.
  LoaderPosition restore_checkpoint();

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
  // network.profile and network.intra_profile, as the run read them.
  RunNetworkProfiles profiles_;
  const NetworkProfile& level_profile(const std::string& level) const {
    return level == "intra" ? profiles_.intra : profiles_.inter;
  }
  std::optional<at::ScalarType> amp_dtype_;  // autocast's dtype (train.amp; none: off)
  std::unique_ptr<LossScaler> scaler_;       // fp16 only

  std::vector<NamedTensor> params_, buffers_;
  std::vector<GradBucket> buckets_;
  std::vector<int64_t> fusion_groups_;  // the buckets' tensor counts; empty: train.fusion: size
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<BatchSource> loader_;
  int64_t steps_per_epoch_ = 0;
  double base_lr_ = 0;             // after large-batch scaling
  double first_decay_epoch_ = -1;  // of a step schedule (-1: none)
  const CheckpointDir* checkpoints_ = nullptr;
  CollectiveWatchdog* watchdog_ = nullptr;
  int64_t resume_step_ = -1;
  TensorMap checkpoint_state_;  // restored state not yet handed over (the algorithm's part)
  int64_t step_ = 0;
  // The step and evaluation rows and their totals (bytes, the epoch's sums, accuracies, seconds).
  StepRecorder recorder_;
  double eval_seconds_ = 0;    // spent in evaluations so far (excluded from the logged img/s)
  double last_consensus_ = 0;  // the last evaluation's consensus distance (evaluator.h)
  bool reached_target_ = false;
  // train.full_batch (runner/train/trainer_full_batch.cpp): f* of the objective, and the gap.
  double optimum_ = 0;
  bool reached_gap_ = false;
  // The full-batch loader and f*.
  void build_full_batch();
  // The step's gap f(θ_k) − f* (the agreed training loss is f at the step's parameters) as step
  // stat "gap"; the first at most train.target_gap also "gap_reached" and ends training.
  void record_gap(StepContext& ctx, const StepAgreement& agreed);
  // Whether the epoch that just ended is evaluated: always for image data; in full-batch runs
  // (an epoch is a step) every eval_every_steps steps (0: none) and at the last step.
  bool evaluate_after_epoch(int64_t epoch) const;
  // Evaluation of the averaged model on every rank's shard: the objective and, for logistic
  // regression, the accuracy.
  EvalResult evaluate_full_batch();
  std::unique_ptr<StepTrace> trace_;    // CEDAR_TRACE_DIR (runner/train/step_trace.h), or null
  std::unique_ptr<Timeline> timeline_;  // train.trace (runner/train/timeline.h), or null
};

}  // namespace cedar
