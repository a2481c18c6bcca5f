// TernGrad — Wen, Xu, Yan, Wu, Wang, Chen, Li, "TernGrad: Ternary Gradients to Reduce Communication
// in Distributed Deep Learning", NeurIPS 2017.
//
// Rule, per layer (one gradient tensor g of n elements) on every worker:
//   gradient clipping: g_i ← sign(g_i)·min(|g_i|, c·σ), σ the standard deviation of g;
//   scaler s = ‖g‖∞ (of the clipped g); with the paper's scaler sharing (also the reference
//   code's max_scalers()) every worker uses s = max over workers of their scalers;
//   ternarize: g̃ = s · sign(g) ∘ b, b_i ~ Bernoulli(|g_i| / s).
// E[g̃] = clipped g. The workers' ternary gradients are averaged and the optimizer applies its
// usual (momentum) SGD step. Each worker clips at its own c·σ, as the paper states; the reference
// code instead ternarizes the unclipped g with the shared scaler c·max σ (equivalent to clipping
// at the shared scaler), and its scaler is c·σ even when max|g| < c·σ.
//
// Hyper-parameters:
//   clip           (default 2.5)  c, the paper's clipping factor in units of σ; 0: no clipping.
//   scaler_sharing (default true) share s = max of the workers' scalers (one allgather of one fp32
//                                 per layer before the codes); false: each worker sends its own s.
//
// Exchange per trainer bucket of T tensors (fixed sizes, so plain allgathers):
//   scaler_sharing: allgather of T fp32 scalers (4T bytes), then allgather of the codes;
//   otherwise:      one allgather of [T fp32 scalers][codes].
//   codes: per tensor, n 2-bit codes packed by bit_packing.h (LSB first), each tensor starting on
//   a byte boundary; 0 → 0, 1 → +s, 2 → −s (3 unused).
//   Bytes per rank per bucket, either way: 4T + Σ ⌈n_i/4⌉.
// σ is the population standard deviation (divide by n) in double, as in the reference code, in
// one pass (codecs/terngrad_codec.h: its summation order and the uniforms). Randomness:
// make_generator(seed, rank, step, stream = bucket.index); the codec draws one key per tensor from
// it, in bucket order. Gradients off the CPU are encoded and decoded on their device by the
// codec's device-generic form (codecs/generic_codecs.h): the same codes for the same scalers, the
// scaler max|g| the same, c·σ from LibTorch's fp64 sums; only the T scalers visit the host.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/generic_codecs.h"
#include "algorithms/codecs/terngrad_codec.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct TernGradParams {
  double clip = 2.5;
  bool scaler_sharing = true;

  template <class V>
  void visit(V& v) {
    v("clip", clip,
      "c: each layer's gradient is clipped to [-c*sigma, c*sigma] (sigma its standard deviation) "
      "before ternarizing; 0 turns clipping off",
      at_least(0));
    v("scaler_sharing", scaler_sharing,
      "workers use the largest of their scalers s = max|g| (one extra allgather of one fp32 per "
      "layer); false: every worker sends its own s with its codes");
  }
};

class TernGrad final : public Algorithm {
 public:
  explicit TernGrad(const TernGradParams& p) : p_(p) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    const int64_t T = static_cast<int64_t>(bucket.entries.size());
    const int P = comm.size();
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(bucket.index));
    if (T && !bucket.entries.front().grad.device().is_cpu())
      return reduce_on_device(bucket, comm, gen);
    std::vector<at::Tensor> g(T);
    std::vector<float> thr(T), scale(T);
    std::vector<int64_t> offset(T + 1);
    offset[0] = p_.scaler_sharing ? 0 : 4 * T;
    for (int64_t i = 0; i < T; ++i) {
      g[i] = bucket.entries[i].grad.detach().to(at::kCPU, at::kFloat).contiguous().reshape({-1});
      const float* x = g[i].data_ptr<float>();
      const int64_t n = g[i].numel();
      const TernaryStats st = ternary_stats(x, n, p_.clip);
      thr[i] = st.clip;
      // max_k min(|x_k|, c·σ) = min(max_k |x_k|, c·σ): the largest clipped magnitude.
      scale[i] = std::min(st.max_abs, thr[i]);
      offset[i + 1] = offset[i] + packed_bytes(n, 2);
    }
    if (p_.scaler_sharing) {
      at::Tensor all =
          comm.allgather(at::from_blob(scale.data(), {T}, at::kFloat).clone().to(comm.device()))
              .cpu();
      const float* sp = all.data_ptr<float>();
      for (int r = 0; r < P; ++r)
        for (int64_t i = 0; i < T; ++i) scale[i] = std::max(scale[i], sp[r * T + i]);
    }

    // Encode this rank's codes (and scalers when they are not shared).
    at::Tensor mine = at::empty({offset[T]}, at::kByte);
    uint8_t* mp = mine.data_ptr<uint8_t>();
    if (!p_.scaler_sharing && T) std::memcpy(mp, scale.data(), 4 * static_cast<size_t>(T));
    for (int64_t i = 0; i < T; ++i)
      ternarize(g[i].data_ptr<float>(), g[i].numel(), scale[i], thr[i], gen, mp + offset[i]);

    // Every rank decodes every rank's codes and averages (rank order: identical on all ranks).
    at::Tensor all = comm.allgather(mine.to(comm.device())).cpu().contiguous();
    const uint8_t* ap = all.data_ptr<uint8_t>();
    static const float kTernary[4] = {0.0f, 1.0f, -1.0f, 0.0f};
    for (int64_t i = 0; i < T; ++i) {
      const int64_t n = g[i].numel();
      auto& e = bucket.entries[i];
      // Decode straight into the gradient when it is a plain CPU fp32 tensor (its values were
      // encoded above and are not read again).
      const bool direct =
          e.grad.device().is_cpu() && e.grad.scalar_type() == at::kFloat && e.grad.is_contiguous();
      at::Tensor sum = direct ? e.grad.view({-1}) : at::empty({n}, at::kFloat);
      float* sp = sum.data_ptr<float>();
      for (int r = 0; r < P; ++r) {
        const uint8_t* rank_bytes = ap + r * offset[T];
        float s = scale[i];
        if (!p_.scaler_sharing) std::memcpy(&s, rank_bytes + 4 * i, 4);
        float value[4];
        for (int c = 0; c < 4; ++c) value[c] = kTernary[c] * s;
        add_ternary(rank_bytes + offset[i], n, value, r == 0, sp);
      }
      if (P > 1) sum.div_(P);
      if (!direct) e.grad.copy_(sum.view(e.grad.sizes()));
    }
  }

 private:
  // The rule above with every gradient-sized tensor on the gradients' device: statistics, codes
  // and decoding by generic_codecs.h, in the CPU path's order (one key per tensor, in bucket
  // order; ranks summed in rank order).
  void reduce_on_device(GradBucket& bucket, Communicator& comm, at::Generator& gen) {
    const int64_t T = static_cast<int64_t>(bucket.entries.size());
    const int P = comm.size();
    const at::Device home = bucket.entries.front().grad.device();
    std::vector<at::Tensor> g(T), stats;
    for (int64_t i = 0; i < T; ++i) {
      g[i] = bucket.entries[i].grad.detach().to(home, at::kFloat).contiguous().reshape({-1});
      stats.push_back(generic::ternary_max_abs(g[i]));
      stats.push_back(generic::ternary_clip(g[i], p_.clip));
    }
    const at::Tensor host = at::stack(stats).cpu();  // 2T floats: (max|g|, c·σ) per tensor
    const float* hp = host.data_ptr<float>();
    std::vector<float> thr(T), scale(T);
    for (int64_t i = 0; i < T; ++i) {
      thr[i] = hp[2 * i + 1];
      scale[i] = std::min(hp[2 * i], thr[i]);
    }
    at::Tensor scales = at::from_blob(scale.data(), {T}, at::kFloat).clone();
    if (p_.scaler_sharing) {
      const at::Tensor all = comm.allgather(scales.to(comm.device())).cpu().contiguous();
      const float* sp = all.data_ptr<float>();
      for (int r = 0; r < P; ++r)
        for (int64_t i = 0; i < T; ++i) scale[i] = std::max(scale[i], sp[r * T + i]);
    }
    std::vector<at::Tensor> parts;
    if (!p_.scaler_sharing) parts.push_back(scales.to(home).view(at::kByte));
    std::vector<int64_t> offset(T + 1, p_.scaler_sharing ? 0 : 4 * T);
    for (int64_t i = 0; i < T; ++i) {
      const CounterUniforms rng(draw_key(gen));
      parts.push_back(generic::ternarize(g[i], scale[i], thr[i], rng));
      offset[i + 1] = offset[i] + parts.back().numel();
    }
    const at::Tensor all = comm.allgather(at::cat(parts).to(comm.device())).to(home);
    // Each rank's own scalers, when they travel with the codes (4T bytes per rank, to the host).
    std::vector<float> rank_scales(static_cast<size_t>(P * T));
    if (!p_.scaler_sharing)
      for (int r = 0; r < P; ++r) {
        const at::Tensor s = all.narrow(0, r * offset[T], 4 * T).cpu().contiguous();
        std::memcpy(rank_scales.data() + r * T, s.data_ptr<uint8_t>(), 4 * static_cast<size_t>(T));
      }
    static const float kTernary[4] = {0.0f, 1.0f, -1.0f, 0.0f};
    for (int64_t i = 0; i < T; ++i) {
      const int64_t n = g[i].numel();
      auto& e = bucket.entries[i];
      at::Tensor sum = at::empty({n}, g[i].options());
      for (int r = 0; r < P; ++r) {
        const float s = p_.scaler_sharing ? scale[i] : rank_scales[r * T + i];
        float value[4];
        for (int c = 0; c < 4; ++c) value[c] = kTernary[c] * s;
        generic::add_ternary(all.narrow(0, r * offset[T] + offset[i], offset[i + 1] - offset[i]), n,
                             value, r == 0, sum);
      }
      if (P > 1) sum.div_(P);
      e.grad.copy_(sum.view(e.grad.sizes()));
    }
  }

  TernGradParams p_;
};

}  // namespace

AlgorithmInfo terngrad_algorithm() {
  AlgorithmInfo info = algorithm_info<TernGrad, TernGradParams>(
      "terngrad",
      "TernGrad: per-layer clipping at c*sigma, stochastic ternarization to {-s, 0, s} (2 bits "
      "per element, scaler shared across workers), allgather, decode and average",
      "Wen, Xu, Yan, Wu, Wang, Chen, Li. TernGrad: Ternary Gradients to Reduce Communication in "
      "Distributed Deep Learning. NeurIPS 2017");
  info.device_independent = true;
  info.not_lossless_because = "stochastic rounding to three levels is unbiased, not exact";
  return info;
}

}  // namespace cedar
