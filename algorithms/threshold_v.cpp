// Threshold-v sparsification with error feedback.
// Paper: A. Dutta, E. H. Bergou, A. M. Abdelmoniem, C.-Y. Ho, A. N. Sahu, M. Canini, P. Kalnis,
// "On the Discrepancy between the Theoretical Analysis and Practical Implementations of Compressed
// Communication for Distributed Deep Learning", AAAI 2020 (threshold-v, beside top-k and random-k);
// its authors' GRACE framework (Xu et al., ICDCS 2021) implements it as the `threshold`
// compressor, with v = 0.01 by default.
//
// Rule, per gradient tensor of d coordinates on every worker (memory e, starts at 0):
//   p  = g + e
//   S  = { i : |p_i| >= v }           (every coordinate at or above the threshold: how many is the
//                                      data's, not a fixed k as in top-k)
//   s  = p restricted to S
//   e' = p − s                        (error feedback: what was not sent is kept)
// then the workers' s are averaged and the optimizer applies the average. With error_feedback
// off, p = g and nothing is kept. The memory is rescaled by η_old/η_new when the learning rate
// changes, as top-k's (rescale_memory_for_lr in exchange/sparse_exchange.h). Comparisons are in
// fp32 (v rounded to fp32); a NaN counts as the largest magnitude, as in top-k's selection
// (codecs/magnitude_scan.h), so it is sent rather than hidden in the memory. v = 0 sends every
// coordinate: dense SGD's update.
//
// Exchange: each rank's selected (int32 index, fp32 value) pairs of every tensor, indices
// ascending (the sparse encoding of codecs/sparse_codec.h: 8 bytes per sent coordinate), in ONE
// allgatherv per bucket preceded by one int64 length per tensor, since the counts depend on the
// data (exchange/compressed_exchange.h): 8·T + 8·Σ_i |S_i| payload bytes per bucket of T tensors.
//
// Hyper-parameters:
//   threshold       v: the coordinates with |g + e| >= v are sent          (default 0.01, GRACE's)
//   error_feedback  keep the unsent remainder in a memory                    (default true)
#include <ATen/ATen.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/magnitude_scan.h"
#include "algorithms/codecs/sparse_codec.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/sparse_exchange.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

// The sparse codec's selection for threshold-v: every coordinate with |x_i| >= v, ascending.
class ThresholdCompressor final : public SparseCompressor {
 public:
  explicit ThresholdCompressor(double v) : v_(static_cast<float>(v)) {}

  // On the CPU, magnitude keys: |x| >= v exactly where key(x) > key(v) − 1 (for v >= 0 the keys
  // order the magnitudes, NaN above every number). Elsewhere the same set by tensor ops.
  at::Tensor select(const at::Tensor& x, at::Generator&) override {
    const at::Tensor flat = x.detach().reshape({-1});
    at::Tensor index;
    if (!flat.is_cpu()) {
      const at::Tensor a = flat.to(at::kFloat).abs();
      index = at::nonzero(a.ge(v_).logical_or_(a.isnan())).reshape({-1});
    } else {
      std::vector<int64_t> found;
      scan(flat, [&](int64_t i, float) { found.push_back(i); });
      index = at::tensor(found, at::kLong);
    }
    selected_ += index.numel();
    return index;
  }

  // On the CPU the pairs go straight into the payload: one pass for the count, one to write them.
  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override {
    if (!x.is_cpu()) return SparseCompressor::compress(x, gen);
    const at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
    check_size(v.numel());
    int64_t k = 0;
    scan(v, [&](int64_t, float) { ++k; });
    at::Tensor out = at::empty({sparse_payload_bytes(k)}, at::kByte);
    auto* index = reinterpret_cast<int32_t*>(out.data_ptr<uint8_t>());  // 64-byte aligned
    auto* value = reinterpret_cast<float*>(out.data_ptr<uint8_t>() + 4 * k);
    int64_t j = 0;
    scan(v, [&](int64_t i, float xi) {
      index[j] = static_cast<int32_t>(i);
      value[j++] = xi;
    });
    selected_ += k;
    return out;
  }

  // Coordinates selected since the last call (the step's count, for the run's stats).
  int64_t take_selected() {
    const int64_t k = selected_;
    selected_ = 0;
    return k;
  }

 private:
  // hit(i, x_i) for every i with |x_i| >= v, ascending; `x` a contiguous 1-D fp32 CPU tensor.
  template <class Hit>
  void scan(const at::Tensor& x, Hit&& hit) const {
    const at::Tensor c = x.to(at::kFloat).contiguous();
    const float* p = c.data_ptr<float>();
    const int32_t floor = magnitude_key(v_) - 1;  // key > floor  <=>  |x| >= v
    for_each_above(p, 0, c.numel(), floor, [&](int64_t i) { hit(i, p[i]); });
  }

  static void check_size(int64_t n) {
    if (n > std::numeric_limits<int32_t>::max())
      throw std::invalid_argument("threshold-v: " + std::to_string(n) +
                                  " elements do not fit the int32 indices of the sparse encoding");
  }

  float v_;
  int64_t selected_ = 0;
};

struct ThresholdVParams {
  double threshold = 0.01;
  bool error_feedback = true;
  template <class V>
  void visit(V& v) {
    v("threshold", threshold,
      "v: the coordinates with |g + e| >= v are sent with their indices (GRACE's default)",
      at_least(0));
    v("error_feedback", error_feedback, "add the unsent remainder to the next gradient (memory)");
  }
};

class ThresholdV final : public Algorithm {
 public:
  explicit ThresholdV(const ThresholdVParams& p) : params_(p), compressor_(p.threshold) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    if (params_.error_feedback) memory_.rescale(bucket, ctx.lr);
    // The selection draws nothing at random; the generator only satisfies the interface.
    at::Generator gen = make_generator(ctx.seed, comm.rank(), ctx.step, bucket.index);
    ExchangeResult r = exchange_compressed(
        bucket, comm, compressor_, params_.error_feedback ? &memory_.memory() : nullptr, gen);
    ctx.stats["threshold-v.payload_bytes"] += static_cast<double>(r.payload_bytes);
    ctx.stats["threshold-v.sent"] += static_cast<double>(compressor_.take_selected());
  }

  void save_state(AlgorithmState& out) const override { memory_.save(out); }
  void load_state(const AlgorithmState& in) override { memory_.load(in); }

 private:
  ThresholdVParams params_;
  ThresholdCompressor compressor_;
  LrScaledMemory memory_;
};

}  // namespace

AlgorithmInfo threshold_v_algorithm() {
  AlgorithmInfo info = algorithm_info<ThresholdV, ThresholdVParams>(
      "threshold-v",
      "threshold-v sparsification with error feedback: send every coordinate with |g+e| >= v per "
      "tensor (a data-dependent count, allgatherv), keep the rest",
      "Dutta, Bergou, Abdelmoniem, Ho, Sahu, Canini, Kalnis. On the Discrepancy between the "
      "Theoretical Analysis and Practical Implementations of Compressed Communication for "
      "Distributed Deep Learning. AAAI 2020");
  info.device_independent = true;
  info.lossless = {{"{threshold: 0}", 0}};  // every coordinate, through the same sums as dense
  return info;
}

}  // namespace cedar
