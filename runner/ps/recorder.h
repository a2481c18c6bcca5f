#pragma once
// Rank 0's records of a parameter-server run (runner/ps/run.h): the workers' statistics as they
// arrive over the control channel, a step row per applied update built from them, and the
// evaluations of the server-held model, all through the trainer's StepRecorder
// (runner/train/step_recorder.h), whose totals count every worker's pushes and state them per
// worker.
#include <cstdint>
#include <string>
#include <vector>

#include "runner/ps/layout.h"
#include "runner/ps/protocol.h"
#include "runner/ps/run.h"
#include "runner/ps/server.h"
#include "runner/ps/worker_buffers.h"
#include "runner/train/checkpoint.h"
#include "runner/train/step_recorder.h"

namespace cedar {

class PsRecorder {
 public:
  PsRecorder(const PsRunInputs& in, const PsLayout& layout, int64_t updates_per_epoch);

  // Receives the statistics of `worker`'s push and its buffers after the step (kStatsTag on the
  // control channel).
  void receive_stats(int worker);
  // Whether the training losses of u's gradients are finite; else `why` says whose is not.
  bool losses_finite(const PsUpdate& u, std::string& why) const;
  // The update's row: the sums of its gradients' workers' statistics, its seconds, bytes and
  // latency steps the mean over those gradients; staleness, gradients, the worker of a single
  // gradient and LAG's uploads in step_stats.
  void record(const PsUpdate& u);
  // Evaluates the server-held model after `version` updates, with the average of the workers'
  // latest buffers (left in the model: after the run it is the final model), and records it
  // (unless its loss is not finite); the epoch's training sums start again. Returns the test loss.
  double evaluate_now(int64_t version);

  void save(TensorMap& state) const {
    recorder_.save(state, "ps.recorder");
    buffers_.save(state, "ps.worker_buffers.");
  }
  void restore(const TensorMap& state) {
    recorder_.restore(state, "ps.recorder");
    buffers_.restore(state, "ps.worker_buffers.");
  }
  RunSummary summary() const { return recorder_.summary(); }

 private:
  const PsRunInputs& in_;
  const PsLayout& layout_;
  int64_t updates_per_epoch_;
  std::vector<WorkerStepStats> stats_;
  WorkerBuffers buffers_;
  StepRecorder recorder_;
};

}  // namespace cedar
