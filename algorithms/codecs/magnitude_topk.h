#pragma once
// Exact top-k by magnitude on the CPU: top-k's selection (algorithms/topk.cpp).
//
// The rule: the k elements of x that come first when the elements are ranked by |x_i|, larger
// first, and equal magnitudes by index, LOWER INDEX FIRST (so with ties at the k-th magnitude the
// lower indices are kept). Magnitudes compare as magnitude_key does (magnitude_scan.h): +0 and −0
// are equal and a NaN ranks above +inf, as in torch::topk. The selection is written in ascending
// index order with the values x_i at those indices.
//
// Method (no sort of n): a strided sample of |x| gives a floor below the k-th magnitude with high
// probability (its rank in the sample is moved down by three standard deviations of the count),
// one pass over x collects the (index, value) pairs above the floor, in index order, and the
// collected pairs are cut to exactly k by the rule: the k-th key is found by a histogram of the
// keys and nth_element within its bin, and one more pass over the pairs keeps those above it and
// the first (lowest-index) ones equal to it. Whenever 2k pairs are held during the pass they are
// cut to k and the floor rises to the k-th key held, so a run of ties (a mostly zero tensor) or a
// poor sample cannot make it collect more than 2k; when fewer than k pass the sampled floor
// (rare), the pass runs again with no floor. Large tensors are split into one range per thread
// (ATen's intra-op threads) and their collections joined in order. Time: one read of x, a sample
// of about 256·n/k elements, O(k) for the cut.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace cedar {

// The selection with buffers kept from call to call (their pages stay mapped: a fresh megabyte
// costs page faults comparable to the pass itself). One object per caller; not thread safe.
class MagnitudeTopK {
 public:
  // Writes the indices of the rule's k elements of x[0, n), ascending, to index[0, k) and x at
  // them to value[0, k). Throws std::invalid_argument unless 0 <= k <= n < 2^31.
  void select(const float* x, int64_t n, int64_t k, int32_t* index, float* value);

 private:
  // Collected (index, value) pairs, ascending by index: `size` of them in buffers that only grow,
  // and the scratch keys of cutting them down.
  struct Pairs {
    std::vector<int32_t> index;
    std::vector<float> value;
    std::vector<int32_t> keys;
    int64_t size = 0;
    void hold(int64_t capacity);
  };
  int32_t sampled_floor(const float* x, int64_t n, int64_t k);
  Pairs& collect_ranges(const float* x, int64_t n, int64_t k, int32_t floor);

  std::vector<Pairs> ranges_;  // one per range of x (per thread)
  Pairs joined_;               // the ranges' pairs in order, when there are several
  std::vector<float> sample_;
  std::vector<int32_t> sample_keys_;
};

// The same with buffers of its own (tests, one-off calls).
void magnitude_topk(const float* x, int64_t n, int64_t k, int32_t* index, float* value);

// The rule's k indices of x (any device, read as fp32) as int64 ascending on x's device, by
// tensor ops (magnitude_topk_generic.cpp): the same set as MagnitudeTopK::select, ties included.
// Throws std::invalid_argument unless 0 <= k <= numel < 2^31.
at::Tensor magnitude_topk_indices(const at::Tensor& x, int64_t k);

}  // namespace cedar
