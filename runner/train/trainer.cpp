#include "runner/train/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "runner/train/backward_overlap.h"
#include "runner/train/buckets.h"
#include "runner/train/evaluator.h"
#include "runner/train/exchange_schedule.h"
#include "runner/train/hold_for_signal.h"
#include "runner/train/log.h"
#include "runner/train/lr_schedule.h"
#include "runner/train/mixed_precision.h"
#include "runner/train/optimizer.h"
#include "runner/train/step_trace.h"
#include "runner/train/timeline.h"

namespace cedar {

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Trainer::Trainer(const ExperimentConfig& cfg, const RunNetworkProfiles& profiles,
                 std::shared_ptr<Model> model, const LoadedDataset& data,
                 std::unique_ptr<Algorithm> algorithm, MeteredCommunicator& comm,
                 Communicator& control, ResultStore* store, int64_t run_id, torch::Device device,
                 bool quiet)
    : cfg_(cfg),
      model_(std::move(model)),
      data_(data),
      algorithm_(std::move(algorithm)),
      comm_(comm),
      control_(control),
      store_(store),
      run_id_(run_id),
      device_(device),
      quiet_(quiet),
      profiles_(profiles),
      amp_dtype_(amp_dtype(cfg.train.amp)),
      // The totals count this rank's own traffic; a dense all-reduce on one rank sends nothing.
      recorder_(store, run_id, comm.size() > 1 ? fp32_parameter_bytes(*model_) : 0,
                /*ranks_counted=*/1) {
  if (amp_dtype_ == at::kHalf) scaler_ = std::make_unique<LossScaler>(device_);
  for (auto& p : model_->named_parameters()) params_.push_back({p.key(), p.value()});
  for (auto& b : model_->named_buffers()) buffers_.push_back({b.key(), b.value()});
  buckets_ = make_buckets(params_, static_cast<int64_t>(cfg.train.bucket_mb * 1024 * 1024));
  trace_ = StepTrace::from_environment(comm_.rank());
  if (!cfg.train.trace.empty()) {
    // Checked now rather than when the traced steps are done.
    const std::string path = timeline_path(cfg.train.trace, comm_.rank(), comm_.size());
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!folder.empty() && !std::filesystem::is_directory(folder, ec))
      throw ConfigError("train.trace: " + path + ": folder " + folder.string() + " does not exist");
    timeline_ =
        std::make_unique<Timeline>(path, parse_step_range(cfg.train.trace_steps), comm_.rank());
  }
}

Trainer::~Trainer() = default;

void Trainer::set_checkpoints(const CheckpointDir* dir, int64_t resume_step) {
  checkpoints_ = dir;
  resume_step_ = dir ? resume_step : -1;
}

void Trainer::broadcast_initial_state() {
  torch::NoGradGuard no_grad;
  // The model lives on the run's device: it goes through the device's communicator (NCCL or MPI
  // on the GPU, the bootstrap on the CPU), which moves it without a round trip through host
  // memory, unmetered (comm_.inner()) since it is the harness's traffic, not the algorithm's.
  Communicator& device_comm = comm_.inner();
  for (auto& p : params_) device_comm.broadcast(p.tensor, 0);
  for (auto& b : buffers_) device_comm.broadcast(b.tensor, 0);
}

RunSummary Trainer::run() {
  broadcast_initial_state();
  if (trace_) trace_->initial(params_, buffers_);
  comm_.reset_step();
  build_loader();
  if (resume_step_ < 0) choose_fusion();  // a resumed run's buckets are in its checkpoint
  build_optimizer();
  // A fresh run starts at epoch 0; a resumed one where its checkpoint left off.
  const LoaderPosition resume_at = start_or_resume();
  model_->train();
  std::unique_ptr<BackwardOverlap> overlap;
  if (cfg_.train.overlap && algorithm_->uses_batch_gradient_at())
    throw ConfigError("train.overlap: true: algorithm " + cfg_.algorithm +
                      " computes a second gradient of the step's batch before its exchange, "
                      "which an exchange started inside backward cannot wait for; set "
                      "train.overlap: false");
  if (cfg_.train.overlap)
    overlap =
        std::make_unique<BackwardOverlap>(buckets_, params_, priority_slice_elements(cfg_.train));

  for (int64_t epoch = resume_at.epoch; epoch < cfg_.train.epochs && !reached_target_; ++epoch) {
    const bool resumed = resume_step_ >= 0 && epoch == resume_at.epoch;
    int64_t first_batch = 0;
    if (resumed) {
      first_batch = resume_at.cursor / cfg_.train.batch_size;  // the epoch's sums are restored
    } else {
      recorder_.start_epoch();
      loader_->start_epoch(epoch);
    }
    run_epoch(epoch, first_batch, overlap.get());
    if (step_limit_reached()) break;
    // The next epoch starts fresh: its permutation and augmentation draws come from (seed, epoch),
    // its training sums from zero.
    if (checkpoints_ && epoch + 1 < cfg_.train.epochs && !reached_target_) {
      recorder_.start_epoch();
      save_checkpoint(LoaderPosition{epoch + 1, 0, ""});
    }
  }
  // A run that ended before the last traced step: what it traced.
  if (timeline_ && !timeline_->written()) timeline_->write();
  if (trace_) {
    AlgorithmState state;
    algorithm_->save_state(state);
    trace_->finish(params_, buffers_, state);
  }
  return recorder_.summary();
}

void Trainer::build_optimizer() {
  std::map<std::string, at::Tensor> grad_of;
  for (auto& b : buckets_)
    for (auto& e : b.entries) grad_of[e.name] = e.grad;
  std::vector<at::Tensor> grads;
  for (auto& p : params_) grads.push_back(grad_of.at(p.name));
  optimizer_ = make_optimizer(cfg_.optimizer, params_, grads, momentum_plan(*algorithm_));
}

void Trainer::build_loader() {
  if (cfg_.train.full_batch) return build_full_batch();
  Augmentation aug = cfg_.data.augment ? data_.train_aug : Augmentation{};
  // Pinned batches on a GPU run, so that the step's copies to the device are asynchronous.
  const PrefetchOptions prefetch{cfg_.data.prefetch, cfg_.data.workers, device_.is_cuda()};
  loader_ = std::make_unique<ShardedLoader>(data_.train, data_.norm, aug, cfg_.train.batch_size,
                                            comm_.rank(), comm_.size(), cfg_.train.seed,
                                            /*shuffle=*/true, /*drop_last=*/true, prefetch);
  steps_per_epoch_ = loader_->batches_per_epoch();
  if (steps_per_epoch_ == 0)
    throw ConfigError("train.batch_size " + std::to_string(cfg_.train.batch_size) + " x " +
                      std::to_string(comm_.size()) + " ranks exceeds the " +
                      std::to_string(data_.train.count) + " training images");
  base_lr_ = scaled_base_lr(cfg_.optimizer, comm_.size(), cfg_.train.batch_size);
  const auto& milestones = cfg_.optimizer.milestones;
  if (cfg_.optimizer.schedule == "step" && !milestones.empty())
    first_decay_epoch_ = *std::min_element(milestones.begin(), milestones.end());
}

LoaderPosition Trainer::start_or_resume() {
  // The algorithm's setup sees the restored parameters, then its own state is restored over it.
  LoaderPosition resume_at;
  recorder_.start_clock();
  if (resume_step_ >= 0) resume_at = restore_checkpoint();
  algorithm_->setup(params_, comm_);
  // CEDAR_TRACE_INJECT (runner/train/step_trace.h): a state the differential tests start from.
  if (const AlgorithmState injected = StepTrace::injected_state(); !injected.empty())
    algorithm_->load_state(injected);
  if (resume_step_ >= 0) {
    AlgorithmState state;
    for (const auto& [key, t] : checkpoint_state_)
      if (key.rfind("algorithm.", 0) == 0) state[key.substr(10)] = t;
    algorithm_->load_state(state);
    checkpoint_state_.clear();
  }
  return resume_at;
}

void Trainer::run_epoch(int64_t epoch, int64_t first_batch, BackwardOverlap* overlap) {
  Batch batch;
  double epoch_reached = epoch + 1.0;
  const double images_start = monotonic_seconds();
  const double evaluated_before = eval_seconds_;
  for (int64_t i = first_batch; loader_->next(batch); ++i) {
    if (watchdog_) watchdog_->set_step(step_);
    StepContext ctx = step_context(epoch, i);
    const LocalStep local = train_step(batch, ctx, overlap);
    if (trace_)
      trace_->step(batch.images, batch.labels, local.report.loss_sum / local.report.count);
    const StepAgreement agreed = agree_on_step(control_, local.report);
    check_finite(agreed, local);
    if (cfg_.train.full_batch) record_gap(ctx, agreed);
    record_step(epoch, ctx, local, agreed);
    ++step_;
    if (end_of_step(epoch, i, agreed.stop_signal)) {
      epoch_reached = epoch + double(i + 1) / steps_per_epoch_;
      break;
    }
  }
  if (!evaluate_after_epoch(epoch)) return;
  evaluate_and_log(epoch_reached);
  log_epoch(epoch, monotonic_seconds() - images_start - (eval_seconds_ - evaluated_before));
}

bool Trainer::end_of_step(int64_t epoch, int64_t batch, int stop) {
  const bool last_in_epoch = batch + 1 == steps_per_epoch_;
  const bool limit = step_limit_reached();
  const int64_t every = cfg_.train.eval_every_steps;
  const bool eval_due = (every > 0 && step_ % every == 0) ||
                        evaluation_due(batch + 1, steps_per_epoch_, cfg_.train.evals_per_epoch);
  if (!last_in_epoch && !limit && eval_due)
    evaluate_and_log(epoch + double(batch + 1) / steps_per_epoch_);
  const bool checkpoints = checkpoints_ != nullptr;
  if (stop) {
    if (checkpoints) save_checkpoint(loader_->position());
    throw Interrupted(std::string("interrupted by SIG") + sigabbrev_np(stop) + " at step " +
                      std::to_string(step_) + (checkpoints ? " (checkpoint written)" : ""));
  }
  if (limit) return true;
  const int64_t save_every = cfg_.train.checkpoint_every_steps;
  if (checkpoints && save_every > 0 && !last_in_epoch && step_ % save_every == 0)
    save_checkpoint(loader_->position());
  // Tests: a step provably reached and not finished.
  if (hold_requested_after(step_, comm_.rank())) {
    if (store_) store_->flush();
    hold_for_signal(comm_.rank());
  }
  return false;
}

bool Trainer::step_limit_reached() const {
  return cfg_.train.max_steps > 0 && step_ >= cfg_.train.max_steps;
}

void Trainer::log_epoch(int64_t epoch, double train_seconds) const {
  if (quiet_ || comm_.rank() != 0) return;
  const EpochSums& es = recorder_.epoch_sums();
  log_info(strprintf("epoch %lld/%lld step %lld | loss %.4f acc %.2f%% | test acc %.2f%% (averaged "
                     "model) | %.0f img/s/rank | payload %.2f MB (dense %.2f MB), rank 0",
                     static_cast<long long>(epoch + 1), static_cast<long long>(cfg_.train.epochs),
                     static_cast<long long>(step_), es.loss_sum / std::max(1.0, es.count),
                     100.0 * es.correct / std::max(1.0, es.count),
                     100.0 * recorder_.last_accuracy(),
                     es.count / comm_.size() / std::max(1e-9, train_seconds),
                     recorder_.counted_payload_bytes() / 1e6,
                     double(recorder_.dense_bytes()) * step_ / 1e6) +
           // Ranks whose models differ (gossip, local SGD): how far apart they are.
           (last_consensus_ > 0 ? strprintf(" | consensus distance %.3g", last_consensus_) : ""));
}

void Trainer::evaluate_and_log(double epoch) {
  const double began = monotonic_seconds();
  // The model as trained: its forward pass in the precision of training.
  EvalResult r = cfg_.train.full_batch
                     ? evaluate_full_batch()
                     : evaluate_averaged_model(*model_, data_.test, data_.norm,
                                               std::max<int64_t>(cfg_.train.batch_size, 256),
                                               device_, control_, amp_dtype_);
  eval_seconds_ += monotonic_seconds() - began;
  if (!std::isfinite(r.loss))
    throw Diverged("step " + std::to_string(step_) + ": the test loss of the averaged model is " +
                   std::to_string(r.loss));
  last_consensus_ = r.consensus_distance;
  if (cfg_.train.target_accuracy > 0 && r.accuracy >= cfg_.train.target_accuracy)
    reached_target_ = true;
  recorder_.record_eval(r, step_, epoch);
}

}  // namespace cedar
