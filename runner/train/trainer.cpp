#include "runner/train/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "runner/train/backward_overlap.h"
#include "runner/train/buckets.h"
#include "runner/train/evaluator.h"
#include "runner/train/hold_for_signal.h"
#include "runner/train/log.h"
#include "runner/train/lr_schedule.h"
#include "runner/train/optimizer.h"
#include "runner/train/run_guard.h"

namespace cedar {
double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Trainer::Trainer(const ExperimentConfig& cfg, std::shared_ptr<Model> model,
                 const LoadedDataset& data, std::unique_ptr<Algorithm> algorithm,
                 MeteredCommunicator& comm, Communicator& control, ResultStore* store,
                 int64_t run_id, torch::Device device, bool quiet)
    : cfg_(cfg), model_(std::move(model)), data_(data), algorithm_(std::move(algorithm)),
      comm_(comm), control_(control), store_(store), run_id_(run_id), device_(device),
      quiet_(quiet),
      network_(find_network_profile(cfg.network.profile)) {
  for (auto& p : model_->named_parameters()) params_.push_back({p.key(), p.value()});
  for (auto& b : model_->named_buffers()) buffers_.push_back({b.key(), b.value()});
  int64_t numel = 0;
  for (auto& p : params_) numel += p.tensor.numel();
  dense_bytes_ = comm_.size() > 1 ? numel * 4 : 0;
  buckets_ = make_buckets(params_, static_cast<int64_t>(cfg.train.bucket_mb * 1024 * 1024));
}

Trainer::~Trainer() = default;

void Trainer::set_checkpoints(const CheckpointDir* dir, int64_t resume_step) {
  checkpoints_ = dir;
  resume_step_ = dir ? resume_step : -1;
}

void Trainer::broadcast_initial_state() {
  torch::NoGradGuard no_grad;
  for (auto& p : params_) control_.broadcast(p.tensor, 0);
  for (auto& b : buffers_) control_.broadcast(b.tensor, 0);
}

double Trainer::first_nonfinite_update() const {
  for (const auto& b : buckets_) {
    if (torch::isfinite(b.flat).all().item<bool>()) continue;
    for (const auto& e : b.entries) {
      if (torch::isfinite(e.grad).all().item<bool>()) continue;
      for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].name == e.name) return double(i + 1);
    }
  }
  return 0;
}

RunSummary Trainer::run() {
  broadcast_initial_state();
  comm_.reset_step();

  std::map<std::string, at::Tensor> grad_of;
  for (auto& b : buckets_)
    for (auto& e : b.entries) grad_of[e.name] = e.grad;
  std::vector<at::Tensor> grads;
  for (auto& p : params_) grads.push_back(grad_of.at(p.name));
  optimizer_ = make_optimizer(cfg_.optimizer, params_, grads, momentum_plan(*algorithm_));

  Augmentation aug = cfg_.data.augment ? data_.train_aug : Augmentation{};
  loader_ = std::make_unique<ShardedLoader>(data_.train, data_.norm, aug, cfg_.train.batch_size,
                                            comm_.rank(), comm_.size(), cfg_.train.seed,
                                            /*shuffle=*/true, /*drop_last=*/true);
  ShardedLoader& loader = *loader_;
  const int64_t steps_per_epoch = loader.batches_per_epoch();
  if (steps_per_epoch == 0)
    throw ConfigError("train.batch_size " + std::to_string(cfg_.train.batch_size) + " x " +
                      std::to_string(comm_.size()) + " ranks exceeds the " +
                      std::to_string(data_.train.count) + " training images");
  const double base_lr = scaled_base_lr(cfg_.optimizer, comm_.size(), cfg_.train.batch_size);
  const double total_epochs = static_cast<double>(cfg_.train.epochs);
  double first_decay_epoch = -1;
  if (cfg_.optimizer.schedule == "step" && !cfg_.optimizer.milestones.empty())
    first_decay_epoch = *std::min_element(cfg_.optimizer.milestones.begin(), cfg_.optimizer.milestones.end());

  // A fresh run starts at epoch 0; a resumed one where its checkpoint left off (the algorithm's
  // setup sees the restored parameters, then its own state is restored over it).
  StepStats resumed_stats;
  LoaderPosition resume_at;
  start_ = monotonic_seconds();
  if (resume_step_ >= 0) resume_at = restore_checkpoint(resumed_stats);
  algorithm_->setup(params_, comm_);
  if (resume_step_ >= 0) {
    AlgorithmState state;
    for (const auto& [key, t] : checkpoint_state_)
      if (key.rfind("algorithm.", 0) == 0) state[key.substr(10)] = t;
    algorithm_->load_state(state);
    checkpoint_state_.clear();
  }
  model_->train();
  const bool checkpoints = checkpoints_ != nullptr;
  std::unique_ptr<BackwardOverlap> overlap;
  if (cfg_.train.overlap) overlap = std::make_unique<BackwardOverlap>(buckets_, params_);
  const int64_t every = cfg_.train.checkpoint_every_steps;
  const int64_t max_steps = cfg_.train.max_steps;

  for (int64_t epoch = resume_at.epoch; epoch < cfg_.train.epochs && !reached_target_; ++epoch) {
    StepStats es;
    int64_t first_batch = 0;
    if (resume_step_ >= 0 && epoch == resume_at.epoch) {
      es = resumed_stats;
      first_batch = resume_at.cursor / cfg_.train.batch_size;
    } else {
      loader.start_epoch(epoch);
    }
    Batch batch;
    double epoch_reached = epoch + 1.0;
    double images_start = monotonic_seconds();
    for (int64_t i = first_batch; loader.next(batch); ++i) {
      StepContext ctx;
      ctx.step = step_;
      ctx.epoch = epoch;
      ctx.steps_per_epoch = steps_per_epoch;
      ctx.seed = cfg_.train.seed;
      ctx.base_lr = base_lr;
      ctx.first_decay_epoch = first_decay_epoch;
      ctx.momentum_buffers = &optimizer_->momentum_buffers();
      double epoch_f = epoch + double(i) / steps_per_epoch;
      ctx.lr = learning_rate(cfg_.optimizer, base_lr, epoch_f, total_epochs);

      double t0 = monotonic_seconds();
      comm_.reset_step();
      auto x = batch.images.to(device_);
      auto y = batch.labels.to(device_);
      model_->zero_grad();
      auto out = model_->forward(x);
      auto loss = torch::nn::functional::cross_entropy(out, y);
      double exposed_comm = -1;  // with overlap: time waiting for exchanges after backward
      if (overlap) {
        overlap->start(*algorithm_, comm_, ctx);
        loss.backward();
        const double w0 = monotonic_seconds();
        overlap->finish();
        exposed_comm = monotonic_seconds() - w0;
      } else {
        loss.backward();
        gather_gradients(buckets_);
        for (auto& b : buckets_) algorithm_->reduce_gradients(b, comm_, ctx);
      }
      const double exchange_seconds = comm_.step().seconds;
      const double bad_update = first_nonfinite_update();
      optimizer_->step(ctx.lr);
      algorithm_->after_step(params_, buffers_, comm_, ctx);
      const CommCounters step_comm = comm_.step();
      const double modeled = network_.seconds(step_comm.latency_steps, step_comm.bus_bytes);
      double step_time = monotonic_seconds() - t0;

      // Harness bookkeeping (unmetered), one allgather: loss, correct, count, payload, a stop
      // request (SIGINT/SIGTERM) and the first non-finite update of every rank, so that every
      // rank takes the same decision at the same step.
      double loss_v = loss.item<double>();
      double correct_v = out.argmax(1).eq(y).sum().item<double>();
      constexpr int64_t kFields = 6;
      auto mine = torch::tensor({loss_v * y.size(0), correct_v, double(y.size(0)),
                                 double(step_comm.payload_bytes), double(stop_signal()), bad_update},
                                torch::kDouble);
      auto all = control_.allgather(mine).view({-1, kFields});
      auto sums = all.sum(0);
      auto s = sums.accessor<double, 1>();
      auto per_rank = all.accessor<double, 2>();
      for (int64_t r = 0; r < all.size(0); ++r) {
        if (per_rank[r][5] == 0) continue;
        const auto& name = params_[static_cast<size_t>(per_rank[r][5]) - 1].name;
        throw Diverged("step " + std::to_string(step_) + ": the update of " + name + " on rank " +
                       std::to_string(r) + " is not finite (NaN/Inf)");
      }
      if (!std::isfinite(s[0]))
        throw Diverged("step " + std::to_string(step_) + ": the training loss is " + std::to_string(s[0]));
      int stop = 0;
      for (int64_t r = 0; r < all.size(0) && !stop; ++r) stop = static_cast<int>(per_rank[r][4]);
      es.loss_sum += s[0];
      es.correct += s[1];
      es.count += s[2];
      // Seconds inside the communicator (emulated time included). With overlap, compute is the
      // step minus the communication backward did not hide.
      const double comm_seconds = step_comm.seconds;
      const double compute_seconds =
          step_time - (exposed_comm >= 0 ? exposed_comm + (step_comm.seconds - exchange_seconds)
                                         : comm_seconds);
      es.comm += comm_seconds;
      es.compute += compute_seconds;
      ++es.steps;
      cum_payload_ += step_comm.payload_bytes;
      cum_bus_ += step_comm.bus_bytes;

      if (store_) {
        StepRow row;
        row.step = step_;
        row.epoch = epoch;
        row.wall_seconds = monotonic_seconds() - start_;
        row.compute_seconds = compute_seconds;
        row.comm_seconds = comm_seconds;
        row.payload_bytes = step_comm.payload_bytes;
        row.bus_bytes = step_comm.bus_bytes;
        row.payload_bytes_all = static_cast<int64_t>(s[3]);
        row.cum_payload_bytes = cum_payload_;
        row.cum_bus_bytes = cum_bus_;
        row.dense_bytes = dense_bytes_;
        row.train_loss = s[0] / s[2];
        row.train_accuracy = s[1] / s[2];
        row.learning_rate = ctx.lr;
        row.stats.assign(ctx.stats.begin(), ctx.stats.end());
        row.latency_steps = step_comm.latency_steps;
        row.modeled_comm_seconds = modeled;
        store_->add_step(run_id_, row);
      }
      ++step_;
      bool last_in_epoch = i + 1 == steps_per_epoch;
      bool limit = max_steps > 0 && step_ >= max_steps;
      if (!last_in_epoch && !limit && cfg_.train.eval_every_steps > 0 &&
          step_ % cfg_.train.eval_every_steps == 0)
        evaluate_and_log(epoch + double(i + 1) / steps_per_epoch, es);
      if (stop) {
        if (checkpoints) save_checkpoint(loader.position(), es);
        throw Interrupted(std::string("interrupted by SIG") + sigabbrev_np(stop) + " at step " +
                          std::to_string(step_) + (checkpoints ? " (checkpoint written)" : ""));
      }
      if (limit) {
        epoch_reached = epoch + double(i + 1) / steps_per_epoch;
        break;
      }
      if (checkpoints && every > 0 && !last_in_epoch && step_ % every == 0)
        save_checkpoint(loader.position(), es);
      if (hold_requested_after(step_, comm_.rank())) {  // tests: a step provably reached and not finished
        if (store_) store_->flush();
        hold_for_signal(comm_.rank());
      }
    }
    evaluate_and_log(epoch_reached, es);
    if (!quiet_ && comm_.rank() == 0) {
      double secs = monotonic_seconds() - images_start;
      log_info(strprintf("epoch %lld/%lld step %lld | loss %.4f acc %.2f%% | test acc %.2f%% (averaged "
                         "model) | %.0f img/s | payload %.2f MB (dense %.2f MB), rank 0",
                   static_cast<long long>(epoch + 1), static_cast<long long>(cfg_.train.epochs),
                   static_cast<long long>(step_), es.loss_sum / std::max(1.0, es.count),
                   100.0 * es.correct / std::max(1.0, es.count), 100.0 * last_accuracy_,
                   es.count / std::max(1e-9, secs), cum_payload_ / 1e6,
                   double(dense_bytes_) * step_ / 1e6));
    }
    if (max_steps > 0 && step_ >= max_steps) break;
    // The next epoch starts fresh: its permutation and augmentation draws come from (seed, epoch).
    if (checkpoints && epoch + 1 < cfg_.train.epochs && !reached_target_)
      save_checkpoint(LoaderPosition{epoch + 1, 0, ""}, StepStats{});
  }

  RunSummary summary;
  summary.final_test_accuracy = last_accuracy_;
  summary.best_test_accuracy = best_accuracy_;
  summary.wall_seconds = monotonic_seconds() - start_;
  summary.total_payload_bytes = cum_payload_;
  summary.total_bus_bytes = cum_bus_;
  return summary;
}

void Trainer::evaluate_and_log(double epoch, const StepStats& es) {
  EvalResult r = evaluate_averaged_model(*model_, data_.test, data_.norm,
                                         std::max<int64_t>(cfg_.train.batch_size, 256), device_,
                                         control_);
  if (!std::isfinite(r.loss))
    throw Diverged("step " + std::to_string(step_) + ": the test loss of the averaged model is " +
                   std::to_string(r.loss));
  last_accuracy_ = r.accuracy;
  best_accuracy_ = std::max(best_accuracy_, r.accuracy);
  if (cfg_.train.target_accuracy > 0 && r.accuracy >= cfg_.train.target_accuracy)
    reached_target_ = true;
  if (store_) {
    EvalRow row;
    row.step = step_;
    row.epoch = epoch;
    row.wall_seconds = monotonic_seconds() - start_;
    row.cum_payload_bytes = cum_payload_;
    row.cum_bus_bytes = cum_bus_;
    row.test_loss = r.loss;
    row.test_accuracy = r.accuracy;
    row.train_loss = es.loss_sum / std::max(1.0, es.count);
    row.train_accuracy = es.correct / std::max(1.0, es.count);
    store_->add_eval(run_id_, row);
  }
}

}  // namespace cedar
