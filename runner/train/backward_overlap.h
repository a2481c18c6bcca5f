#pragma once
// Overlap of communication with the backward pass: a hook on every parameter copies its gradient
// into its bucket as soon as autograd produces it, and a communication thread exchanges each
// bucket (Algorithm::reduce_gradients) once all of its gradients are in, while backward goes on
// with earlier layers. Buckets are exchanged in their fixed index order (reverse model order, the
// order backward produces them), so every rank issues the same collectives in the same order and
// the results equal those of exchanging after backward.
// With slice_elements > 0 (train.schedule: priority) the buckets are cut into slices instead
// (runner/train/sliced_buckets.h), exchanged one at a time in the order the ranks agree on
// (runner/train/priority_schedule.h): the highest-priority slice ready on every rank first.
// Benchmark only: with CEDAR_OVERLAP_TRACE=FILE each rank appends, per step and bucket, when the
// bucket's last gradient arrived and when its exchange started and ended, in seconds since the
// step's backward started, and when backward ended (bench/overlap.sh reads it).
#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "runner/train/exchange_overlap.h"

namespace cedar {

class SlicedBuckets;
class Timeline;

class BackwardOverlap {
 public:
  BackwardOverlap(std::vector<GradBucket>& buckets, const std::vector<NamedTensor>& params,
                  int64_t slice_elements = 0);
  ~BackwardOverlap();
  BackwardOverlap(const BackwardOverlap&) = delete;
  BackwardOverlap& operator=(const BackwardOverlap&) = delete;

  // Before backward: arms the hooks and starts the communication thread for this step.
  void start(Algorithm& algorithm, Communicator& comm, StepContext& ctx);
  // After backward: zero-fills gradients autograd did not produce (unused parameters), waits for
  // the last exchange and rethrows an error of the communication thread.
  void finish();
  // After finish(), train.trace: the step's stretches of backward up to each bucket's last
  // gradient (within backward, [backward_start_us, backward_end_us]) and each bucket's exchange
  // on the exchange thread, into `timeline` as step `step`.
  void record(Timeline& timeline, int64_t step, double backward_start_us,
              double backward_end_us) const;
  // After finish(): the step's exchanges (each bucket's, or each slice's) against backward's
  // interval [backward_start, backward_end] in steady-clock seconds (monotonic_seconds()).
  ExchangeOverlap exchange_overlap(double backward_start, double backward_end) const;

 private:
  struct Slot {
    size_t bucket, entry;
    at::Tensor view;  // the parameter's gradient view in its bucket
  };
  void gradient_ready(size_t slot, const at::Tensor& grad);
  // Marks slot i's gradient in (under the lock).
  void fill(size_t slot, double at_seconds);
  // The communication thread: for each started step, exchanges buckets in index order, or the
  // slices in the agreed order.
  void worker(int threads);
  void exchange_slices(std::unique_lock<std::mutex>& lock);

  std::vector<GradBucket>& buckets_;
  std::vector<at::Tensor> params_;
  std::vector<Slot> slots_;
  std::vector<unsigned> hook_ids_;
  std::vector<int64_t> missing_;  // per bucket: gradients not yet in this step
  std::vector<bool> filled_;      // per slot: gradient in this step
  std::atomic<bool> armed_{false};
  bool stop_ = false;                    // the trainer is going away: exchange nothing more
  uint64_t started_ = 0, finished_ = 0;  // steps handed to / completed by the worker
  Algorithm* algorithm_ = nullptr;
  Communicator* comm_ = nullptr;
  StepContext* ctx_ = nullptr;
  std::mutex mu_;
  std::condition_variable ready_;
  std::thread worker_;
  std::exception_ptr error_;
  // Per bucket, arrival of its last gradient and its exchange's start and end (CEDAR_OVERLAP_TRACE,
  // train.trace).
  std::string trace_path_;
  std::chrono::steady_clock::time_point step_start_;
  // This step's exchanges, in seconds since step_start_, in the order they ran.
  std::vector<std::pair<double, double>> exchanges_;
  std::vector<double> ready_at_, exchange_start_, exchange_end_;
  double backward_end_ = 0;
  void write_trace();
  std::unique_ptr<SlicedBuckets> slices_;  // train.schedule: priority, else null
};

}  // namespace cedar
