#include "runner/train/slice_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

namespace cedar {

std::vector<Slice> plan_slices(const std::vector<std::vector<BucketPiece>>& buckets,
                               int64_t slice_elements) {
  if (slice_elements < 1)
    throw std::invalid_argument("slices of " + std::to_string(slice_elements) +
                                " elements: a slice holds at least one");
  std::vector<Slice> slices;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const std::vector<BucketPiece>& pieces = buckets[b];
    int64_t total = 0;
    for (const BucketPiece& p : pieces) total += p.numel;
    size_t first = 0;      // the first piece that may overlap the next slice
    int64_t first_at = 0;  // where that piece starts in the buffer
    for (int64_t at = 0; at < total; at += slice_elements) {
      Slice s;
      s.bucket = static_cast<int64_t>(b);
      s.offset = at;
      s.numel = std::min(slice_elements, total - at);
      s.priority = INT64_MAX;
      // Skip the pieces that end before the slice, then take those that start before its end.
      while (first_at + pieces[first].numel <= at) first_at += pieces[first++].numel;
      int64_t piece_at = first_at;
      for (size_t i = first; i < pieces.size() && piece_at < at + s.numel; ++i) {
        if (pieces[i].numel > 0) {
          s.pieces.push_back(static_cast<int64_t>(i));
          s.priority = std::min(s.priority, pieces[i].layer);
        }
        piece_at += pieces[i].numel;
      }
      slices.push_back(std::move(s));
    }
  }
  std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return std::tie(a.priority, a.bucket, a.offset) < std::tie(b.priority, b.bucket, b.offset);
  });
  return slices;
}

}  // namespace cedar
