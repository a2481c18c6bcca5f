#include "runner/train/sliced_buckets.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "runner/train/timeline.h"

namespace cedar {

GradBucket slice_of(const GradBucket& bucket, const Slice& s) {
  GradBucket out;
  out.index = bucket.index;
  out.flat = bucket.flat.narrow(0, s.offset, s.numel);
  int64_t at = 0;  // where entry e starts in the bucket's buffer
  size_t next = 0;
  for (size_t e = 0; e < bucket.entries.size() && next < s.pieces.size(); ++e) {
    const GradEntry& entry = bucket.entries[e];
    const int64_t n = entry.grad.numel();
    if (static_cast<int64_t>(e) == s.pieces[next]) {
      const int64_t from = std::max(at, s.offset), to = std::min(at + n, s.offset + s.numel);
      at::Tensor part = bucket.flat.narrow(0, from, to - from);
      if (to - from == n) part = part.view(entry.grad.sizes());
      out.entries.push_back({entry.name, entry.param, part});
      ++next;
    }
    at += n;
  }
  return out;
}

SlicedBuckets::SlicedBuckets(std::vector<GradBucket>& buckets,
                             const std::vector<std::pair<size_t, size_t>>& entry_of,
                             int64_t slice_elements) {
  // Each bucket's pieces with their model positions.
  std::vector<std::vector<BucketPiece>> pieces(buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b)
    for (const GradEntry& e : buckets[b].entries) pieces[b].push_back({e.grad.numel(), 0});
  for (size_t p = 0; p < entry_of.size(); ++p)
    pieces[entry_of[p].first][entry_of[p].second].layer = static_cast<int64_t>(p);
  slices_ = plan_slices(pieces, slice_elements);
  // Per (bucket, entry), its parameter's model position.
  std::vector<std::vector<size_t>> param_of(buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b) param_of[b].assign(buckets[b].entries.size(), 0);
  for (size_t p = 0; p < entry_of.size(); ++p) param_of[entry_of[p].first][entry_of[p].second] = p;
  slices_of_.assign(entry_of.size(), {});
  for (size_t i = 0; i < slices_.size(); ++i) {
    const Slice& s = slices_[i];
    views_.push_back(slice_of(buckets[static_cast<size_t>(s.bucket)], s));
    for (int64_t piece : s.pieces)
      slices_of_[param_of[static_cast<size_t>(s.bucket)][static_cast<size_t>(piece)]].push_back(
          static_cast<int64_t>(i));
  }
  reset();
}

void SlicedBuckets::reset() {
  missing_.assign(slices_.size(), 0);
  for (size_t i = 0; i < slices_.size(); ++i)
    missing_[i] = static_cast<int64_t>(slices_[i].pieces.size());
  ready_.assign(slices_.size(), false);
  ready_count_ = 0;
  ready_us_.assign(slices_.size(), 0);
  start_us_.assign(slices_.size(), 0);
  end_us_.assign(slices_.size(), 0);
  rounds_.clear();
  // A slice of parameters without elements only (none) is ready from the start.
  for (size_t i = 0; i < slices_.size(); ++i)
    if (missing_[i] == 0) {
      ready_[i] = true;
      ++ready_count_;
    }
}

void SlicedBuckets::gradient_in(size_t param) {
  for (int64_t i : slices_of_[param]) {
    const auto s = static_cast<size_t>(i);
    if (--missing_[s] > 0) continue;
    ready_[s] = true;
    ready_us_[s] = trace_clock_us();
    ++ready_count_;
  }
}

ReadySnapshot SlicedBuckets::snapshot() const { return {ready_, trace_clock_us()}; }

void SlicedBuckets::exchanged(int64_t i, double start_us, double end_us) {
  start_us_[static_cast<size_t>(i)] = start_us;
  end_us_[static_cast<size_t>(i)] = end_us;
}

void SlicedBuckets::record(Timeline& timeline, int64_t step) const {
  for (size_t i = 0; i < slices_.size(); ++i) {
    const Slice& s = slices_[i];
    const std::string id = "slice " + std::to_string(i);
    const auto tag = [&](TimelineEvent& e) {
      e.bucket = s.bucket;
      e.slice = static_cast<int64_t>(i);
      e.priority = s.priority;
      e.elements = s.numel;
    };
    tag(timeline.add(step, kTraceReady, id + " ready", ready_us_[i], ready_us_[i]));
    tag(timeline.add(step, kTraceExchange,
                     "exchange " + id + " (bucket " + std::to_string(s.bucket) + ")", start_us_[i],
                     end_us_[i], kTraceExchangeThread));
  }
  for (size_t k = 0; k < rounds_.size(); ++k) {
    const ScheduleRound& round = rounds_[k];
    TimelineEvent& e =
        timeline.add(step, kTraceNegotiate,
                     "negotiate round " + std::to_string(k) + ": " +
                         (round.chosen < 0 ? std::string("no slice ready everywhere")
                                           : "slice " + std::to_string(round.chosen)),
                     round.taken_us, round.agreed_us, kTraceExchangeThread);
    e.slice = round.chosen;
  }
}

}  // namespace cedar
