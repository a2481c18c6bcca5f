#pragma once
// The trainer's fusion buckets cut into the slices of train.schedule: priority
// (runner/train/slice_plan.h), with each slice's readiness in the current step and what the
// exchange thread did with it, for the timeline.
#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "runner/train/priority_schedule.h"
#include "runner/train/slice_plan.h"

namespace cedar {

class Timeline;

// Slice `s` of `bucket` as a bucket of its own for Algorithm::reduce_gradients: `flat` the
// stretch of the bucket's buffer (a view: the result lands in the bucket), `index` the bucket's,
// and one entry per parameter it holds, whose `grad` is the 1-D part of that parameter's gradient
// inside the slice (the parameter's shape only where the slice holds all of it).
GradBucket slice_of(const GradBucket& bucket, const Slice& s);

class SlicedBuckets {
 public:
  // `entry_of[i]`: (bucket, entry) of the parameter at position i in model order.
  SlicedBuckets(std::vector<GradBucket>& buckets,
                const std::vector<std::pair<size_t, size_t>>& entry_of, int64_t slice_elements);

  int64_t size() const { return static_cast<int64_t>(slices_.size()); }
  const Slice& slice(int64_t i) const { return slices_[static_cast<size_t>(i)]; }
  GradBucket& bucket(int64_t i) { return views_[static_cast<size_t>(i)]; }

  // The caller serialises the following calls (the overlap's lock).
  // A new step: no gradient in.
  void reset();
  // The parameter at model position `param` has its gradient in its bucket.
  void gradient_in(size_t param);
  int64_t ready_count() const { return ready_count_; }
  bool complete() const { return ready_count_ == size(); }
  ReadySnapshot snapshot() const;

  // From the exchange thread: slice i's exchange ran from start_us to end_us; the step's rounds.
  void exchanged(int64_t i, double start_us, double end_us);
  void set_rounds(std::vector<ScheduleRound> rounds) { rounds_ = std::move(rounds); }
  const std::vector<ScheduleRound>& rounds() const { return rounds_; }

  // After the step (train.trace): per slice, the moment it was ready here ("ready", on the
  // training thread) and its exchange ("exchange", on the exchange thread, with its bucket, slice
  // and priority); per round, the negotiation ("negotiate", with the slice it chose).
  void record(Timeline& timeline, int64_t step) const;

 private:
  std::vector<Slice> slices_;
  std::vector<GradBucket> views_;
  std::vector<std::vector<int64_t>> slices_of_;  // per parameter (model order): its slices
  std::vector<int64_t> missing_;                 // per slice: parameters not yet in this step
  std::vector<bool> ready_;
  int64_t ready_count_ = 0;
  std::vector<double> ready_us_, start_us_, end_us_;
  std::vector<ScheduleRound> rounds_;
};

}  // namespace cedar
