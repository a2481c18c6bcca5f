// One training step of the Trainer: this rank's forward, backward, exchange and update, then what
// it contributes to and takes from the ranks' agreement on the step.
#include <torch/torch.h>

#include <cmath>

#include "comm/device_stream.h"
#include "runner/train/backward_overlap.h"
#include "runner/train/batch_gradient.h"
#include "runner/train/buckets.h"
#include "runner/train/communicators.h"
#include "runner/train/log.h"
#include "runner/train/lr_schedule.h"
#include "runner/train/mixed_precision.h"
#include "runner/train/optimizer.h"
#include "runner/train/run_guard.h"
#include "runner/train/step_trace.h"
#include "runner/train/timeline.h"
#include "runner/train/trainer.h"

namespace cedar {

StepContext Trainer::step_context(int64_t epoch, int64_t batch) const {
  StepContext ctx;
  ctx.step = step_;
  ctx.epoch = epoch;
  ctx.steps_per_epoch = steps_per_epoch_;
  ctx.seed = cfg_.train.seed;
  ctx.base_lr = base_lr_;
  ctx.first_decay_epoch = first_decay_epoch_;
  ctx.momentum_buffers = &optimizer_->momentum_buffers();
  double epoch_f = epoch + double(batch) / steps_per_epoch_;
  ctx.lr = learning_rate(cfg_.optimizer, base_lr_, epoch_f, static_cast<double>(cfg_.train.epochs));
  return ctx;
}

Trainer::LocalStep Trainer::train_step(const Batch& batch, StepContext& ctx,
                                       BackwardOverlap* overlap) {
  // On a GPU the step's boundaries wait for the device's queued work, as the metering layer's do
  // around each operation (comm/metered_communicator.h): compute_seconds is then the step's
  // device time less its communication, comparable with a CPU run's.
  wait_for_device(device_);
  double t0 = monotonic_seconds();
  // train.trace: this step's timeline; untraced steps read no clock for it.
  Timeline* const tl = timeline_ && timeline_->records(step_) ? timeline_.get() : nullptr;
  comm_.reset_step();
  // From pinned memory (a CUDA run) the copies are asynchronous, ordered before the forward pass
  // on the device's stream; on the CPU these are the batch's own tensors.
  auto x = batch.images.to(device_, batch.images.scalar_type(), /*non_blocking=*/true);
  auto y = batch.labels.to(device_, batch.labels.scalar_type(), /*non_blocking=*/true);
  model_->zero_grad();
  at::Tensor out, loss;
  const double forward_us = tl ? trace_clock_us() : 0;
  {
    // train.amp: the forward pass and the loss under autocast; backward outside it, as in PyTorch.
    AutocastGuard autocast(device_.type(), amp_dtype_);
    out = model_->forward(x);
    loss = model_->loss(out, y);
  }
  const double backward_us = tl ? trace_clock_us() : 0;
  if (tl) tl->add(step_, kTraceForward, "forward", forward_us, backward_us);
  LocalStep local;
  // fp16: backward from the scaled loss; the gradients are unscaled before the exchange, so the
  // algorithms and their error-feedback memories see the true gradients.
  if (scaler_) local.loss_scale = scaler_->scale_value();
  const at::Tensor backward_from = scaler_ ? scaler_->scale(loss) : loss;
  double exposed_comm = -1;  // with overlap: time waiting for exchanges after backward
  if (overlap) {
    // Not with fp16 (config/experiment_config.cpp refuses it): the exchange starts in backward.
    const double b0 = monotonic_seconds();
    overlap->start(*algorithm_, comm_, ctx);
    backward_from.backward();
    const double w0 = monotonic_seconds();
    overlap->finish();
    const double w1 = monotonic_seconds();
    exposed_comm = w1 - w0;
    // How much of the exchange backward hid (runner/train/exchange_overlap.h).
    const ExchangeOverlap hidden = overlap->exchange_overlap(b0, w0);
    ctx.stats["overlap_exchange_seconds"] = hidden.exchange;
    ctx.stats["overlap_hidden_seconds"] = hidden.hidden;
    if (tl) {
      tl->add(step_, kTraceBackward, "backward", backward_us, w0 * 1e6);
      tl->add(step_, kTraceWait, "wait for exchanges", w0 * 1e6, w1 * 1e6);
      overlap->record(*tl, step_, backward_us, w0 * 1e6);
    }
  } else {
    backward_from.backward();
    gather_gradients(buckets_);
    if (tl) tl->add(step_, kTraceBackward, "backward", backward_us, trace_clock_us());
    if (scaler_) local.skipped = unscale_and_agree_to_skip();
    if (!local.skipped) {
      // A second forward and backward of this batch, on the algorithm's request (LASG-WK2).
      if (algorithm_->uses_batch_gradient_at())
        ctx.batch_gradient_at =
            offered_batch_gradient({model_.get(), &params_, &buffers_, x, y, amp_dtype_,
                                    local.loss_scale > 0 ? local.loss_scale : 1.0},
                                   ctx);
      for (size_t b = 0; b < buckets_.size(); ++b) {
        const double exchange_us = tl ? trace_clock_us() : 0;
        algorithm_->reduce_gradients(buckets_[b], comm_, ctx);
        if (!tl) continue;
        TimelineEvent& e = tl->add(step_, kTraceExchange, "exchange bucket " + std::to_string(b),
                                   exchange_us, trace_clock_us());
        e.bucket = static_cast<int64_t>(b);
        e.elements = buckets_[b].flat.numel();
      }
      ctx.batch_gradient_at = nullptr;
    }
  }
  const double exchange_seconds = comm_.step().seconds;
  int64_t bad_update = 0;
  // A skipped step leaves the parameters, the optimizer and the algorithm as they were.
  if (!local.skipped) {
    if (trace_) trace_->gradients(params_, buckets_);  // before the step, which is recorded next
    bad_update = first_nonfinite_update();
    const double optimizer_us = tl ? trace_clock_us() : 0;
    optimizer_->step(ctx.lr);
    const double after_us = tl ? trace_clock_us() : 0;
    algorithm_->after_step(params_, buffers_, comm_, ctx);
    if (tl) {
      tl->add(step_, kTraceOptimizer, "optimizer", optimizer_us, after_us);
      tl->add(step_, kTraceAfterStep, "algorithm after step", after_us, trace_clock_us());
    }
  }
  if (scaler_) {
    scaler_->update(local.skipped);
    ctx.stats["amp_loss_scale"] = local.loss_scale;
    ctx.stats["amp_skipped"] = local.skipped ? 1.0 : 0.0;
  }
  local.comm = comm_.step();
  local.levels = comm_.step_levels();
  // The run's own communicator's traffic on network.profile, each level's on its profile.
  int64_t own_latency = local.comm.latency_steps, own_bus = local.comm.bus_bytes;
  for (const auto& [level, c] : local.levels) {
    own_latency -= c.latency_steps;
    own_bus -= c.bus_bytes;
    local.modeled_comm_seconds += level_profile(level).seconds(c.latency_steps, c.bus_bytes);
  }
  local.modeled_comm_seconds += profiles_.inter.seconds(own_latency, own_bus);
  wait_for_device(device_);
  const double t1 = monotonic_seconds();
  double step_time = t1 - t0;
  if (tl) {
    tl->add(step_, kTraceStep, "step " + std::to_string(step_), t0 * 1e6, t1 * 1e6);
    tl->step_done(step_);
  }
  // Seconds inside the communicator (emulated time included). With overlap, compute is the step
  // minus the communication backward did not hide.
  local.compute_seconds =
      step_time - (exposed_comm >= 0 ? exposed_comm + (local.comm.seconds - exchange_seconds)
                                     : local.comm.seconds);
  local.report.loss_sum = loss.item<double>() * y.size(0);
  local.report.correct = model_->correct(out, y).item<double>();
  local.report.count = double(y.size(0));
  local.report.payload_bytes = local.comm.payload_bytes;
  local.report.stop_signal = stop_signal();
  local.report.nonfinite_param = bad_update;
  return local;
}

int64_t Trainer::first_nonfinite_update() const {
  for (const auto& b : buckets_) {
    if (torch::isfinite(b.flat).all().item<bool>()) continue;
    for (const auto& e : b.entries) {
      if (torch::isfinite(e.grad).all().item<bool>()) continue;
      for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].name == e.name) return static_cast<int64_t>(i + 1);
    }
  }
  return 0;
}

bool Trainer::unscale_and_agree_to_skip() {
  std::vector<at::Tensor> flats;
  for (const auto& b : buckets_) flats.push_back(b.flat);
  const bool mine = scaler_->unscale(flats);
  return any_rank_overflowed(control_, mine);
}

void Trainer::check_finite(const StepAgreement& agreed, const LocalStep& local) const {
  if (local.skipped) {
    // Skipping and backing off is how loss scaling handles an overflow; at a scale this low the
    // gradients are not finite without any scaling, and backing off further does not help.
    if (local.loss_scale <= kDivergedLossScale)
      throw Diverged("step " + std::to_string(step_) +
                     strprintf(": the gradients are not finite (NaN/Inf) at fp16 loss scale %g "
                               "(train.amp: fp16)",
                               local.loss_scale));
    return;
  }
  if (agreed.nonfinite_rank >= 0) {
    const auto& name = params_[static_cast<size_t>(agreed.nonfinite_param) - 1].name;
    throw Diverged("step " + std::to_string(step_) + ": the update of " + name + " on rank " +
                   std::to_string(agreed.nonfinite_rank) + " is not finite (NaN/Inf)");
  }
  if (!std::isfinite(agreed.loss_sum))
    throw Diverged("step " + std::to_string(step_) + ": the training loss is " +
                   std::to_string(agreed.loss_sum));
}

void Trainer::record_step(int64_t epoch, const StepContext& ctx, const LocalStep& local,
                          const StepAgreement& agreed) {
  StepMeasures m;
  m.step = step_;
  m.epoch = epoch;
  m.compute_seconds = local.compute_seconds;
  m.comm_seconds = local.comm.seconds;
  m.payload_bytes = local.comm.payload_bytes;
  m.bus_bytes = local.comm.bus_bytes;
  m.payload_bytes_all = agreed.payload_bytes;
  m.latency_steps = local.comm.latency_steps;
  m.modeled_comm_seconds = local.modeled_comm_seconds;
  // The totals are this rank's own traffic (the recorder counts one rank).
  m.counted_payload_bytes = local.comm.payload_bytes;
  m.counted_bus_bytes = local.comm.bus_bytes;
  m.loss_sum = agreed.loss_sum;
  m.correct = agreed.correct;
  m.count = agreed.count;
  m.learning_rate = ctx.lr;
  if (recorder_.writes_rows()) {
    m.stats.assign(ctx.stats.begin(), ctx.stats.end());
    for (const auto& [level, c] : local.levels) {
      const NetworkProfile& profile = level_profile(level);
      const auto ranks = comm_.level_ranks().find(level);
      m.levels.push_back({level, profile.name,
                          ranks == comm_.level_ranks().end() ? 0 : int64_t{ranks->second}, c.calls,
                          c.payload_bytes, c.bus_bytes, c.latency_steps,
                          profile.seconds(c.latency_steps, c.bus_bytes), c.seconds});
    }
  }
  recorder_.record_step(m);
}

}  // namespace cedar
