#include "datasets/prefetcher.h"

#include <stdexcept>
#include <utility>

namespace cedar {

Prefetcher::Prefetcher(BatchPlanner& planner, const BatchFiller& filler, int64_t depth,
                       int64_t workers)
    : planner_(planner),
      filler_(filler),
      depth_(static_cast<size_t>(depth)),
      max_spares_(static_cast<size_t>(depth + workers)) {
  if (depth < 1 || workers < 1)
    throw std::invalid_argument("Prefetcher: depth and workers must be >= 1, got " +
                                std::to_string(depth) + " and " + std::to_string(workers));
  try {
    for (int64_t i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  } catch (...) {
    stop();
    throw;
  }
}

Prefetcher::~Prefetcher() { stop(); }

void Prefetcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  room_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Prefetcher::work() {
  std::vector<uint8_t> scratch;  // this thread's decoded image (sets kept as files)
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    room_.wait(lock, [&] { return stop_ || window_.size() < depth_; });
    if (stop_) return;
    auto slot = std::make_shared<Slot>();
    window_.push_back(slot);
    try {
      slot->plan = planner_.next();
    } catch (...) {
      slot->error = std::current_exception();
    }
    if (slot->error || slot->plan.end_of_epoch()) {
      slot->ready = true;
      filled_.notify_all();
      continue;
    }
    const uint64_t generation = generation_;
    Batch batch;
    if (!spares_.empty()) {
      batch = std::move(spares_.back());
      spares_.pop_back();
    }
    lock.unlock();
    std::exception_ptr error;
    try {
      filler_.fill(slot->plan, batch, scratch);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (generation != generation_) {  // dropped by reset() meanwhile
      if (!error && spares_.size() < max_spares_ && BatchFiller::unshared(batch))
        spares_.push_back(std::move(batch));
      continue;
    }
    slot->batch = std::move(batch);
    slot->error = error;
    slot->ready = true;
    filled_.notify_all();
  }
}

void Prefetcher::reset(const std::function<void(BatchPlanner&)>& reposition) {
  std::lock_guard<std::mutex> lock(mutex_);
  reposition(planner_);
  ++generation_;
  for (auto& slot : window_)
    if (slot->ready && !slot->error && spares_.size() < max_spares_ &&
        BatchFiller::unshared(slot->batch))
      spares_.push_back(std::move(slot->batch));
  window_.clear();
  room_.notify_all();
}

Prefetcher::Item Prefetcher::take() {
  std::unique_lock<std::mutex> lock(mutex_);
  filled_.wait(lock, [&] { return !window_.empty() && window_.front()->ready; });
  const std::shared_ptr<Slot> slot = std::move(window_.front());
  window_.pop_front();
  room_.notify_one();
  return {std::move(slot->plan), std::move(slot->batch), slot->error};
}

void Prefetcher::recycle(Batch spare) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (spares_.size() < max_spares_) spares_.push_back(std::move(spare));
}

}  // namespace cedar
