#pragma once
// Rank 0's records of a parameter-server run (runner/ps/run.h): a step row per applied update,
// the evaluations of the server-held model, and what a checkpoint keeps of them.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "runner/ps/checkpoint.h"
#include "runner/ps/lag_rule.h"
#include "runner/ps/layout.h"
#include "runner/ps/protocol.h"
#include "runner/ps/run.h"
#include "runner/ps/server.h"
#include "runner/ps/worker.h"
#include "runner/train/checkpoint_state.h"
#include "runner/train/evaluator.h"
#include "runner/train/hold_for_signal.h"
#include "runner/train/log.h"
#include "runner/train/lr_schedule.h"
#include "runner/train/trainer.h"

namespace cedar {

// Rank 0's records: the workers' statistics as they arrive, a step row per update, evaluations.
class PsRecorder {
 public:
  PsRecorder(const PsRunInputs& in, const PsLayout& layout, int64_t updates_per_epoch)
      : in_(in), layout_(layout), updates_per_epoch_(updates_per_epoch), stats_(layout.workers) {
    for (const auto& p : in.model->parameters()) dense_bytes_ += p.numel() * 4;
    start_ = monotonic_seconds();
  }

  void receive_stats(int worker) {
    at::Tensor t = at::empty({kStatsWords}, at::kDouble);
    in_.control.recv(t, layout_.rank_of_worker(worker), kStatsTag);
    const double* v = t.data_ptr<double>();
    stats_[static_cast<size_t>(worker)] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
  }

  // Whether the training losses of u's gradients are finite; else `why` says whose is not.
  bool losses_finite(const PsUpdate& u, std::string& why) const {
    for (int w : u.workers) {
      const double loss = stats_[static_cast<size_t>(w)].loss_sum;
      if (std::isfinite(loss)) continue;
      why = "update " + std::to_string(u.version) + ": the training loss of worker " +
            std::to_string(w) + " is " + std::to_string(loss);
      return false;
    }
    return true;
  }

  void record(const PsUpdate& u) {
    double loss = 0, correct = 0, count = 0, compute = 0, comm = 0, latency = 0, epoch = 0;
    int64_t payload = 0, bus = 0;
    for (int w : u.workers) {
      const WorkerStepStats& s = stats_[static_cast<size_t>(w)];
      loss += s.loss_sum;
      correct += s.correct;
      count += s.count;
      compute += s.compute_seconds;
      comm += s.comm_seconds;
      payload += static_cast<int64_t>(s.payload_bytes);
      bus += static_cast<int64_t>(s.bus_bytes);
      latency += s.latency_steps;
      epoch = std::max(epoch, s.epoch);
    }
    const double n = static_cast<double>(std::max<size_t>(1, u.workers.size()));
    epoch_loss_ += loss;
    epoch_correct_ += correct;
    epoch_count_ += count;
    cum_payload_ += payload;
    cum_bus_ += bus;
    if (in_.store) {
      StepRow row;
      row.step = u.version - 1;
      row.epoch = (u.version - 1) / updates_per_epoch_;
      row.wall_seconds = monotonic_seconds() - start_;
      row.compute_seconds = compute / n;
      row.comm_seconds = comm / n;
      row.payload_bytes = static_cast<int64_t>(std::llround(double(payload) / n));
      row.bus_bytes = static_cast<int64_t>(std::llround(double(bus) / n));
      row.payload_bytes_all = payload;
      row.cum_payload_bytes = per_worker(cum_payload_);
      row.cum_bus_bytes = per_worker(cum_bus_);
      row.dense_bytes = dense_bytes_;
      row.train_loss = loss / std::max(1.0, count);
      row.train_accuracy = correct / std::max(1.0, count);
      row.learning_rate = u.lr;
      row.latency_steps = static_cast<int64_t>(latency / n);
      row.modeled_comm_seconds = 0;
      row.stats.push_back({"staleness", static_cast<double>(u.staleness)});
      row.stats.push_back({"gradients", static_cast<double>(u.workers.size())});
      if (u.workers.size() == 1) row.stats.push_back({"worker", u.workers[0]});
      if (in_.ps.upload == "lag") row.stats.push_back({"uploads", double(u.uploads)});
      in_.store->add_step(in_.run_id, row);
    }
  }

  // The test loss of the server-held model.
  double evaluate_now(int64_t version) {
    LocalCommunicator alone;
    const EvalResult r =
        evaluate(*in_.model, in_.data.test, in_.data.norm,
                 std::max<int64_t>(in_.cfg.train.batch_size, 256), in_.device, alone);
    if (!std::isfinite(r.loss)) return r.loss;  // the run diverged: no evaluation row
    last_accuracy_ = r.accuracy;
    best_accuracy_ = std::max(best_accuracy_, r.accuracy);
    const double epoch = double(version) / double(updates_per_epoch_);
    if (in_.store)
      in_.store->add_eval(in_.run_id, eval_row(r, version, epoch, monotonic_seconds() - start_,
                                               per_worker(cum_payload_), per_worker(cum_bus_),
                                               epoch_loss_, epoch_correct_, epoch_count_));
    if (!in_.quiet)
      log_info(strprintf(
          "ps: %lld updates (epoch %.2f) | train loss %.4f acc %.2f%% | test acc "
          "%.2f%% (server-held model) | payload %.2f MB per worker",
          static_cast<long long>(version), epoch, epoch_loss_ / std::max(1.0, epoch_count_),
          100.0 * epoch_correct_ / std::max(1.0, epoch_count_), 100.0 * r.accuracy,
          cum_payload_ / 1e6 / layout_.workers));
    epoch_loss_ = epoch_correct_ = epoch_count_ = 0;
    return r.loss;
  }

  void save(TensorMap& state) const {
    state["ps.recorder"] =
        at::tensor({double(cum_payload_), double(cum_bus_), epoch_loss_, epoch_correct_,
                    epoch_count_, last_accuracy_, best_accuracy_, monotonic_seconds() - start_},
                   at::kDouble);
  }

  void restore(const TensorMap& state) {
    const at::Tensor t = need(state, "ps.recorder").contiguous();
    if (t.scalar_type() != at::kDouble || t.numel() != 8)
      throw std::runtime_error("checkpoint: 'ps.recorder' is not 8 doubles");
    const double* v = t.data_ptr<double>();
    cum_payload_ = static_cast<int64_t>(v[0]);
    cum_bus_ = static_cast<int64_t>(v[1]);
    epoch_loss_ = v[2];
    epoch_correct_ = v[3];
    epoch_count_ = v[4];
    last_accuracy_ = v[5];
    best_accuracy_ = v[6];
    start_ = monotonic_seconds() - v[7];
  }

  RunSummary summary() const {
    RunSummary s;
    s.final_test_accuracy = last_accuracy_;
    s.best_test_accuracy = best_accuracy_;
    s.wall_seconds = monotonic_seconds() - start_;
    s.total_payload_bytes = per_worker(cum_payload_);
    s.total_bus_bytes = per_worker(cum_bus_);
    return s;
  }

 private:
  // The workers' pushes so far, per worker (what one all-reduce rank's counters would say).
  int64_t per_worker(int64_t bytes) const {
    return static_cast<int64_t>(std::llround(double(bytes) / layout_.workers));
  }

  const PsRunInputs& in_;
  const PsLayout& layout_;
  int64_t updates_per_epoch_;
  std::vector<WorkerStepStats> stats_;
  int64_t dense_bytes_ = 0, cum_payload_ = 0, cum_bus_ = 0;
  double epoch_loss_ = 0, epoch_correct_ = 0, epoch_count_ = 0;
  double start_ = 0, last_accuracy_ = 0, best_accuracy_ = 0;
};

}  // namespace cedar
