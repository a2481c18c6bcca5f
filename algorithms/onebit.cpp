// 1-bit SGD — Seide, Fu, Droppo, Li, Yu, "1-Bit Stochastic Gradient Descent and its Application
// to Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014 (GRACE's `onebit`).
//
// Rule, per worker and per gradient tensor (memory e, starts at 0):
//   p  = g + e                           (error feedback: the last quantization error is added
//                                         to the next minibatch's gradient)
//   Q(p)_i = μ₊ if p_i >= 0, else μ₋     (one bit per element; μ₊ and μ₋ the means of the
//                                         non-negative and of the negative entries of p: the
//                                         two-level reconstruction of least squared error)
//   e' = p − Q(p)
// then the workers' Q(p) are averaged and the optimizer applies the average with its usual
// momentum. The memory is kept in gradient units, as the paper adds it to the gradient; it is not
// rescaled when the learning rate changes. With error_feedback off, p = g and nothing is kept.
//
// Granularity: one pair of means per tensor, as GRACE's compressor. The paper quantizes each
// column of a layer's weight-gradient matrix with its own pair; here an encoder sees each
// gradient flattened (the Compressor interface has no shape, and conv weights have no single
// column layout), and per-tensor means keep the two fp32 per tensor the format below counts.
//
// Encoding of one tensor of n elements (codecs/onebit_codec.h): [fp32 μ₋][fp32 μ₊][n bits, 1 for
// p_i >= 0, packed LSB first]: 8 + ⌈n/8⌉ bytes, one allgather per bucket; every rank decodes every
// rank's encoding and averages. NaN entries fall on the negative side and make its mean NaN.
//
// Hyper-parameters:
//   error_feedback  add the quantization error to the next step's gradient   (default true)
#include <ATen/ATen.h>

#include <memory>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/error_feedback.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct OneBitParams {
  bool error_feedback = true;
  template <class V>
  void visit(V& v) {
    v("error_feedback", error_feedback,
      "add the quantization error p - Q(p) to the next step's gradient (the paper's error "
      "feedback; false: the 1-bit quantizer alone)");
  }
};

class OneBit final : public Algorithm {
 public:
  explicit OneBit(const OneBitParams& p) : feedback_(p.error_feedback) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    // The quantizer draws nothing at random; the generator only satisfies the interface.
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(bucket.index));
    exchange_compressed(bucket, comm, *compressor_, feedback_ ? &memory_ : nullptr, gen);
  }

  void save_state(AlgorithmState& out) const override {
    save_tensor_map(out, "memory.", memory_.memories_view());
  }
  void load_state(const AlgorithmState& in) override {
    load_tensor_map(in, "memory.", memory_.memories());
  }

 private:
  const bool feedback_;
  std::unique_ptr<Compressor> compressor_ = make_onebit_compressor();
  ErrorFeedback memory_;
};

}  // namespace

AlgorithmInfo onebit_algorithm() {
  AlgorithmInfo info = algorithm_info<OneBit, OneBitParams>(
      "onebit",
      "1-bit SGD with error feedback: each element of g+e sent as one bit (>= 0 or not), decoded "
      "to the mean of its side; two fp32 means per tensor, allgather, average, keep the error",
      "Seide, Fu, Droppo, Li, Yu. 1-Bit Stochastic Gradient Descent and its Application to "
      "Data-Parallel Distributed Training of Speech DNNs. Interspeech 2014");
  info.device_independent = true;  // the means differ at most in their last bit between devices
  info.codec = "onebit";
  info.not_lossless_because = "every element of a tensor is sent as one of two means";
  return info;
}

}  // namespace cedar
