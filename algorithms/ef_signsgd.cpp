// EF-signSGD — Karimireddy, Rebjock, Stich, Jaggi, "Error Feedback Fixes SignSGD and other Gradient
// Compression Schemes", ICML 2019 (Algorithm 1, EF-SGD, with the scaled sign compressor).
//
// Rule, per worker and per layer (one gradient tensor of d elements), learning rate γ:
//   p = γ·g + e                    (error correction; e starts at 0)
//   Δ = (‖p‖₁ / d) · sign(p)       (scaled sign)
//   e ← p − Δ                      (the residual, kept by this algorithm)
//   x ← x − Δ
// With P workers every rank applies the average of the workers' Δ. Our optimizer computes
// x ← x − lr·grad, so the direction written to the gradients is mean(Δ)/γ with γ = ctx.lr: the
// optimizer's step is then exactly x − mean(Δ). The memory e lives in parameter units, as in the
// paper, so a changing learning rate is handled as Algorithm 1 does (γ_t inside p).
// applies_momentum() is true: EF-SGD has no momentum (the paper's and its reference code's
// EF-signSGD runs use momentum 0), so the optimizer must not add one. The optimizer's weight decay,
// if configured, is added outside the compression (the reference code folds it into g instead).
// The learning rate must be positive (mean(Δ)/γ is undefined for γ = 0).
//
// Hyper-parameters: the learning rate γ (the optimizer's lr schedule), and error_feedback (true).
// error_feedback: false is the paper's control, the scaled sign without memory: p = γ·g and
// Δ = (‖p‖₁/d)·sign(p), a biased compressor whose bias nothing corrects (Sec. 3).
//
// Encoding of one tensor of d elements (codecs/sign_codec.cpp): [fp32 scale ‖p‖₁/d][d sign bits
// packed by bit_packing.h, LSB first, 1 for p ≥ 0 (+scale), 0 for p < 0 (−scale)]: 4 + ⌈d/8⌉
// bytes, one allgather per bucket. One bit cannot carry sign(0) = 0: an exact zero is sent as
// +scale and the error memory absorbs the difference (e' = p − Δ holds exactly for what was sent).
#include <ATen/ATen.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/error_feedback.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct EfSignSgdParams {
  bool error_feedback = true;
  template <class V>
  void visit(V& v) {
    v("error_feedback", error_feedback,
      "keep the residual p - delta and add it to the next step's p (false: the scaled sign "
      "alone, the paper's control without error feedback)");
  }
};

class EfSignSgd final : public Algorithm {
 public:
  explicit EfSignSgd(const EfSignSgdParams& p) : feedback_(p.error_feedback) {}

  bool applies_momentum() const override { return true; }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    const double lr = ctx.lr;
    if (!(lr > 0))
      throw std::invalid_argument("ef-signsgd: the learning rate must be positive (step " +
                                  std::to_string(ctx.step) + " has lr " + std::to_string(lr) + ")");
    // The memory and the encodings live on the bucket's device (generic_codecs.h off the CPU),
    // in fp32: a bucket of another precision is worked on through an fp32 copy.
    const bool fp32 = bucket.flat.scalar_type() == at::kFloat && bucket.flat.is_contiguous();
    GradBucket copy = fp32 ? GradBucket{} : fp32_copy(bucket);
    GradBucket& b = fp32 ? bucket : copy;
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(b.index));
    // p = γ·g + e in the memory's pass, and mean(Δ) / γ in the decoding's: the bits of g·γ, + e,
    // and of the mean, / γ, as separate fp32 operations.
    const float step = static_cast<float>(lr);
    exchange_compressed(b, comm, *compressor_, feedback_ ? &memory_ : nullptr, gen,
                        Combine::kAverage, {}, {step, step});
    if (!fp32) bucket.flat.copy_(copy.flat);
  }

  void save_state(AlgorithmState& out) const override {
    save_tensor_map(out, "memory.", memory_.memories_view());
  }
  void load_state(const AlgorithmState& in) override {
    load_tensor_map(in, "memory.", memory_.memories());
  }

 private:
  static GradBucket fp32_copy(const GradBucket& bucket) {
    GradBucket c;
    c.index = bucket.index;
    c.flat = bucket.flat.to(at::kFloat).contiguous();
    for (const auto& e : bucket.entries) {
      const int64_t off = e.grad.storage_offset() - bucket.flat.storage_offset();
      c.entries.push_back(
          {e.name, e.param, c.flat.narrow(0, off, e.grad.numel()).view(e.grad.sizes())});
    }
    return c;
  }

  const bool feedback_;
  std::unique_ptr<Compressor> compressor_ = make_scaled_sign_compressor();
  ErrorFeedback memory_;
};

}  // namespace

AlgorithmInfo ef_signsgd_algorithm() {
  AlgorithmInfo info = algorithm_info<EfSignSgd, EfSignSgdParams>(
      "ef-signsgd",
      "EF-signSGD: error feedback around the scaled sign (||p||_1/d) sign(p) of p = lr*g + e, 1 "
      "bit per element + one fp32 scale per layer, allgather, average",
      "Karimireddy, Rebjock, Stich, Jaggi. Error Feedback Fixes SignSGD and other Gradient "
      "Compression Schemes. ICML 2019");
  info.device_independent = true;
  info.codec = "scaled_sign";
  info.not_lossless_because = "the update is a scaled sign, whatever the magnitudes";
  return info;
}

}  // namespace cedar
