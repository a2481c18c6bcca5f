#include "runner/train/step_recorder.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/model.h"
#include "runner/train/checkpoint_state.h"
#include "runner/train/evaluator.h"
#include "runner/train/trainer.h"

namespace cedar {

int64_t fp32_parameter_bytes(const Model& model) {
  int64_t numel = 0;
  for (const auto& p : model.parameters()) numel += p.numel();
  return numel * 4;
}

StepRecorder::StepRecorder(ResultStore* store, int64_t run_id, int64_t dense_bytes,
                           int64_t ranks_counted)
    : store_(store), run_id_(run_id), dense_bytes_(dense_bytes), ranks_counted_(ranks_counted) {
  if (ranks_counted < 1)
    throw std::invalid_argument("StepRecorder: ranks_counted is " + std::to_string(ranks_counted) +
                                ", not at least 1");
}

void StepRecorder::start_clock() { start_ = monotonic_seconds(); }

double StepRecorder::elapsed_seconds() const { return monotonic_seconds() - start_; }

int64_t StepRecorder::per_rank(int64_t bytes) const {
  if (ranks_counted_ == 1) return bytes;
  return static_cast<int64_t>(std::llround(double(bytes) / double(ranks_counted_)));
}

void StepRecorder::record_step(const StepMeasures& m) {
  if (std::isfinite(m.loss_sum)) {
    epoch_.loss_sum += m.loss_sum;
    epoch_.correct += m.correct;
    epoch_.count += m.count;
  }
  cum_payload_ += m.counted_payload_bytes;
  cum_bus_ += m.counted_bus_bytes;
  if (!store_) return;
  StepRow row;
  row.step = m.step;
  row.epoch = m.epoch;
  row.wall_seconds = elapsed_seconds();
  row.compute_seconds = m.compute_seconds;
  row.comm_seconds = m.comm_seconds;
  row.payload_bytes = m.payload_bytes;
  row.bus_bytes = m.bus_bytes;
  row.payload_bytes_all = m.payload_bytes_all;
  row.cum_payload_bytes = cum_payload_bytes();
  row.cum_bus_bytes = cum_bus_bytes();
  row.dense_bytes = dense_bytes_;
  row.train_loss = m.loss_sum / std::max(1.0, m.count);
  if (std::isnan(row.train_loss)) row.train_loss = INFINITY;
  row.train_accuracy = m.correct / std::max(1.0, m.count);
  row.learning_rate = m.learning_rate;
  row.latency_steps = m.latency_steps;
  row.modeled_comm_seconds = m.modeled_comm_seconds;
  row.stats = m.stats;
  row.levels = m.levels;
  store_->add_step(run_id_, row);
}

void StepRecorder::record_eval(const EvalResult& r, int64_t step, double epoch) {
  last_accuracy_ = r.accuracy;
  best_accuracy_ = std::max(best_accuracy_, r.accuracy);
  if (store_)
    store_->add_eval(
        run_id_, eval_row(r, step, epoch, elapsed_seconds(), cum_payload_bytes(), cum_bus_bytes(),
                          epoch_.loss_sum, epoch_.correct, epoch_.count));
}

RunSummary StepRecorder::summary() const {
  RunSummary s;
  s.final_test_accuracy = last_accuracy_;
  s.best_test_accuracy = best_accuracy_;
  s.wall_seconds = elapsed_seconds();
  s.total_payload_bytes = cum_payload_bytes();
  s.total_bus_bytes = cum_bus_bytes();
  return s;
}

void StepRecorder::save(TensorMap& state, const std::string& key) const {
  state[key] = at::tensor({double(cum_payload_), double(cum_bus_), epoch_.loss_sum, epoch_.correct,
                           epoch_.count, last_accuracy_, best_accuracy_, elapsed_seconds()},
                          at::kDouble);
}

void StepRecorder::restore(const TensorMap& state, const std::string& key) {
  const at::Tensor t = need(state, key).contiguous();
  if (t.scalar_type() != at::kDouble || t.numel() != 8)
    throw std::runtime_error("checkpoint: '" + key + "' is not 8 doubles");
  const double* v = t.data_ptr<double>();
  cum_payload_ = static_cast<int64_t>(v[0]);
  cum_bus_ = static_cast<int64_t>(v[1]);
  epoch_ = EpochSums{v[2], v[3], v[4]};
  last_accuracy_ = v[5];
  best_accuracy_ = v[6];
  start_ = monotonic_seconds() - v[7];
}

}  // namespace cedar
