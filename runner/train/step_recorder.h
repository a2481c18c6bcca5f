#pragma once
// What a run writes of its training into the results store, for the trainer
// (runner/train/trainer.h) and the parameter server (runner/ps/recorder.h) alike: a step's row
// (results/store.h StepRow) from what the step measured, the evaluation rows, and the running
// totals those rows carry (the bytes sent so far, the epoch's training sums, the last and best
// test accuracy, the seconds since training began), which a checkpoint keeps. Every rank keeps
// the totals (they make its run summary); only a rank given a store writes rows.
//
// The totals count the traffic of `ranks_counted` ranks and the rows state them per rank: the
// trainer counts rank 0's own traffic (1 rank, so a row's cumulative bytes are rank 0's); the
// parameter server counts every worker's pushes (the workers, so a row states what one worker
// sent on average, what an all-reduce rank's counters would say), rounded to the byte.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "results/store.h"
#include "runner/train/checkpoint.h"

namespace cedar {

struct EvalResult;
class Model;

// The bytes of `model`'s parameters in fp32: what a rank of dense all-reduce SGD sends per step,
// the dense equivalent a row states.
int64_t fp32_parameter_bytes(const Model& model);

// What one step measured, as its row states it.
struct StepMeasures {
  int64_t step = 0, epoch = 0;
  double compute_seconds = 0, comm_seconds = 0;
  // The row's traffic: what one rank sent in the step (the trainer: rank 0's; the parameter
  // server: the mean over the update's gradients) and what every rank sent together.
  int64_t payload_bytes = 0, bus_bytes = 0, payload_bytes_all = 0;
  int64_t latency_steps = 0;
  double modeled_comm_seconds = 0;
  // What the step adds to the totals: the traffic of the ranks they count.
  int64_t counted_payload_bytes = 0, counted_bus_bytes = 0;
  // The training loss summed over the step's samples, the samples classified correctly and the
  // samples, over every rank. A loss that is not finite (a step skipped by fp16 loss scaling)
  // stays out of the epoch's sums; a row whose mean loss is NaN states +inf (NOT NULL).
  double loss_sum = 0, correct = 0, count = 0;
  double learning_rate = 0;
  std::vector<std::pair<std::string, double>> stats;  // step_stats, in this order
  std::vector<StepLevelRow> levels;                   // step_levels
};

// The training sums of the epoch so far (what an evaluation row's training loss averages).
struct EpochSums {
  double loss_sum = 0, correct = 0, count = 0;
};

class StepRecorder {
 public:
  // `store` null: totals only. `dense_bytes`: the dense fp32 all-reduce equivalent every row
  // states. `ranks_counted` >= 1: whose traffic the totals sum (see above).
  StepRecorder(ResultStore* store, int64_t run_id, int64_t dense_bytes, int64_t ranks_counted);

  bool writes_rows() const { return store_ != nullptr; }
  // Training begins: the rows' wall_seconds count from here.
  void start_clock();
  double elapsed_seconds() const;

  // Adds the step to the totals and the epoch's sums, then writes its row.
  void record_step(const StepMeasures& m);
  // A new epoch: its training sums start at zero.
  void start_epoch() { epoch_ = EpochSums{}; }
  // Evaluation `r` (its loss finite) of the model after `step` steps, at `epoch`: becomes the
  // last test accuracy (and the best, if it is), and its row states the totals and the epoch's
  // training sums.
  void record_eval(const EvalResult& r, int64_t step, double epoch);

  const EpochSums& epoch_sums() const { return epoch_; }
  double last_accuracy() const { return last_accuracy_; }
  double best_accuracy() const { return best_accuracy_; }
  int64_t dense_bytes() const { return dense_bytes_; }
  // The payload sent so far by the counted ranks together, and per rank as rows state it.
  int64_t counted_payload_bytes() const { return cum_payload_; }
  int64_t cum_payload_bytes() const { return per_rank(cum_payload_); }
  int64_t cum_bus_bytes() const { return per_rank(cum_bus_); }
  // The run's summary as the totals say it now.
  RunSummary summary() const;

  // The totals, the epoch's sums, the accuracies and the seconds so far as 8 doubles under `key`;
  // restore() throws naming the key when it is absent or not 8 doubles.
  void save(TensorMap& state, const std::string& key) const;
  void restore(const TensorMap& state, const std::string& key);

 private:
  int64_t per_rank(int64_t bytes) const;

  ResultStore* store_;
  int64_t run_id_;
  int64_t dense_bytes_;
  int64_t ranks_counted_;
  int64_t cum_payload_ = 0, cum_bus_ = 0;
  EpochSums epoch_;
  double start_ = 0;
  double last_accuracy_ = 0, best_accuracy_ = 0;
};

}  // namespace cedar
