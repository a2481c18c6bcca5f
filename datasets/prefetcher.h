#pragma once
// Fills planned batches ahead of their consumer on background threads: at most `depth` plans
// beyond the last batch handed over, handed over strictly in plan order whichever thread filled
// them. The plans come from one BatchPlanner, drawn under a lock in stream order, so a batch is
// the same as the synchronous loader's.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "datasets/batch_fill.h"
#include "datasets/batch_plan.h"

namespace cedar {

class Prefetcher {
 public:
  struct Item {
    BatchPlan plan;
    Batch batch;               // filled unless the plan is the end of an epoch or failed
    std::exception_ptr error;  // what filling the batch threw (e.g. an unreadable file)
  };

  // `planner` and `filler` must outlive the prefetcher; from now on the prefetcher alone uses
  // the planner (reposition it through reset()).
  Prefetcher(BatchPlanner& planner, const BatchFiller& filler, int64_t depth, int64_t workers);
  // Stops the workers and joins them; a batch being filled is finished first.
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Lets `reposition` move the planner (while no worker plans), then drops every plan made
  // before; the workers continue from the planner's new place. When `reposition` throws, nothing
  // changes.
  void reset(const std::function<void(BatchPlanner&)>& reposition);
  // The next plan in order, with its batch filled; blocks until it is.
  Item take();
  // A batch whose tensors no one else holds, for the workers to fill again.
  void recycle(Batch spare);

 private:
  struct Slot {
    BatchPlan plan;
    Batch batch;
    std::exception_ptr error;
    bool ready = false;
  };
  void work();
  void stop();

  BatchPlanner& planner_;
  const BatchFiller& filler_;
  const size_t depth_;
  const size_t max_spares_;
  std::mutex mutex_;
  std::condition_variable room_;              // the window has room, or stop
  std::condition_variable filled_;            // a slot became ready
  std::deque<std::shared_ptr<Slot>> window_;  // planned and not yet taken, in plan order
  std::vector<Batch> spares_;
  uint64_t generation_ = 0;  // counts reset(): a slot filled for an older generation is dropped
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace cedar
