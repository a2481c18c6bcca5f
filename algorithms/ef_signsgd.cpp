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
// Hyper-parameters: none besides the learning rate γ (the optimizer's lr schedule).
//
// Encoding of one tensor of d elements: [fp32 scale ‖p‖₁/d][d sign bits packed by bit_packing.h,
// LSB first, 1 for p ≥ 0 (+scale), 0 for p < 0 (−scale)]: 4 + ⌈d/8⌉ bytes, one allgather per
// bucket. One bit cannot carry sign(0) = 0: an exact zero is sent as +scale and the error memory
// absorbs the difference (e' = p − Δ holds exactly for what was sent).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "algorithms/catalog.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/algorithm.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/simd.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/error_feedback.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct EfSignSgdParams {
  template <class V>
  void visit(V&) {}
};

// Δ = (‖p‖₁/d)·sign(p): one fp32 scale and one bit per element.
class ScaledSignCompressor final : public Compressor {
 public:
  int64_t payload_bytes(int64_t numel) const override { return 4 + packed_bytes(numel, 1); }

  at::Tensor compress(const at::Tensor& x, at::Generator&) override {
    at::Tensor p = x.detach().to(at::kCPU, at::kFloat).contiguous().reshape({-1});
    const int64_t d = p.numel();
    const float* pp = p.data_ptr<float>();
    at::Tensor out = at::empty({payload_bytes(d)}, at::kByte);
    uint8_t* op = out.data_ptr<uint8_t>();
    // ‖p‖₁ in element order (fp64) and the sign bits, chunk by chunk while the chunk is cached
    // (every chunk's bits start on a byte).
    double l1 = 0;
    for (int64_t c0 = 0; c0 < d; c0 += kChunk) {
      const int64_t len = std::min(kChunk, d - c0);
      double sum = l1;  // a local: the call below would otherwise keep l1 in memory
      for (int64_t i = c0; i < c0 + len; ++i) sum += std::fabs(pp[i]);
      l1 = sum;
      pack_signs(pp + c0, len, op + 4 + c0 / 8);
    }
    const float scale = d ? static_cast<float>(l1 / static_cast<double>(d)) : 0.0f;
    std::memcpy(op, &scale, 4);
    return out;
  }

  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override {
    // A peer's bytes: the size is checked before the scale is read from them.
    if (numel < 0)
      throw std::invalid_argument("ef-signsgd: negative element count " + std::to_string(numel));
    if (payload.scalar_type() != at::kByte || payload.dim() != 1)
      throw std::invalid_argument("ef-signsgd: expected a 1-D uint8 payload, got " +
                                  std::to_string(payload.dim()) + "-D " +
                                  c10::toString(payload.scalar_type()));
    if (payload.numel() != payload_bytes(numel))
      throw std::invalid_argument("ef-signsgd: a payload of " + std::to_string(payload.numel()) +
                                  " bytes for " + std::to_string(numel) + " elements (expected " +
                                  std::to_string(payload_bytes(numel)) + ": a 4-byte scale and " +
                                  std::to_string(packed_bytes(numel, 1)) + " bytes of sign bits)");
    at::Tensor in = payload.contiguous().cpu();
    float scale = 0;
    std::memcpy(&scale, in.data_ptr<uint8_t>(), 4);
    // The values of bit * (2·scale) − scale in fp32, as the tensor expression computes them.
    const float twice = 2 * scale;
    const float one = 1.0f * twice - scale, zero = 0.0f * twice - scale;
    return unpack_signs(in.narrow(0, 4, in.numel() - 4), numel, one, zero);
  }
};

class EfSignSgd final : public Algorithm {
 public:
  explicit EfSignSgd(const EfSignSgdParams&) {}

  bool applies_momentum() const override { return true; }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    const double lr = ctx.lr;
    if (!(lr > 0))
      throw std::invalid_argument("ef-signsgd: the learning rate must be positive (step " +
                                  std::to_string(ctx.step) + " has lr " + std::to_string(lr) + ")");
    // The memory and the encodings live on the CPU: work on a CPU copy of a device bucket.
    const bool on_cpu = bucket.flat.device().is_cpu();
    GradBucket cpu = on_cpu ? GradBucket{} : cpu_copy(bucket);
    GradBucket& b = on_cpu ? bucket : cpu;
    b.flat.mul_(lr);  // g → γ·g; ErrorFeedback then forms p = γ·g + e
    at::Generator gen = make_generator(ctx.seed, comm.rank(), ctx.step,
                                       static_cast<uint64_t>(b.index));
    exchange_compressed(b, comm, compressor_, &memory_, gen,
                        [lr](const std::vector<at::Tensor>& deltas) {
                          return combine_average(deltas).div_(lr);
                        });
    if (!on_cpu) bucket.flat.copy_(cpu.flat);
  }

  void save_state(AlgorithmState& out) const override {
    save_tensor_map(out, "memory.", memory_.memories_view());
  }
  void load_state(const AlgorithmState& in) override {
    load_tensor_map(in, "memory.", memory_.memories());
  }

 private:
  static GradBucket cpu_copy(const GradBucket& bucket) {
    GradBucket c;
    c.index = bucket.index;
    c.flat = bucket.flat.to(at::kCPU, at::kFloat).contiguous();
    for (const auto& e : bucket.entries) {
      const int64_t off = e.grad.storage_offset() - bucket.flat.storage_offset();
      c.entries.push_back(
          {e.name, e.param, c.flat.narrow(0, off, e.grad.numel()).view(e.grad.sizes())});
    }
    return c;
  }

  ScaledSignCompressor compressor_;
  ErrorFeedback memory_;
};

}  // namespace

AlgorithmInfo ef_signsgd_algorithm() {
  return algorithm_info<EfSignSgd, EfSignSgdParams>(
      "ef-signsgd",
      "EF-signSGD: error feedback around the scaled sign (||p||_1/d) sign(p) of p = lr*g + e, 1 "
      "bit per element + one fp32 scale per layer, allgather, average",
      "Karimireddy, Rebjock, Stich, Jaggi. Error Feedback Fixes SignSGD and other Gradient "
      "Compression Schemes. ICML 2019");
}

// The scaled-sign codec alone (bench/compressors_bench.cpp times it against a memory pass).
std::unique_ptr<Compressor> make_scaled_sign_compressor() {
  return std::make_unique<ScaledSignCompressor>();
}

}  // namespace cedar
