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
// σ is the population standard deviation (divide by n), computed in double, as in the reference
// code, in one pass over g shifted by its first element K (exact for a constant g, no
// cancellation when the mean is far from 0): with d_i = g_i − K summed into eight partial sums
// (element i into sum i mod 8, added ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), codecs/simd.h) for Σd
// and Σd², σ² = max(0, (Σd² − (Σd)²/n)/n). Randomness: make_generator(seed, rank, step,
// stream = bucket.index); per tensor in bucket order key = draw_key(gen), u_i = CounterUniforms(
// key) at element i (counter_rng.h) and b_i = (u_i·s < |clipped g_i|) in fp32.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "algorithms/catalog.h"
#include "algorithms/algorithm.h"
#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/codecs/counter_rng.h"
#include "algorithms/codecs/simd.h"
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

struct LayerStats {
  float clip = std::numeric_limits<float>::infinity();  // c·σ (infinity when clipping is off)
  float max_abs = 0;                                     // max |x_i|, NaNs skipped (0: none)
};

// One pass: max |x_i| and, when clipping, the shifted sums of the header comment (simd.h).
LayerStats layer_stats(const float* x, int64_t n, double c) {
  LayerStats st;
  if (!(c > 0 && n > 0)) {
    st.max_abs = max_abs(x, n);
    return st;
  }
  const ShiftedSums s = shifted_sums(x, n, x[0]);
  st.max_abs = s.max_abs;
  const double nn = static_cast<double>(n);
  const double var = std::max(0.0, (s.sum_sq - s.sum * s.sum / nn) / nn);
  st.clip = static_cast<float>(c * std::sqrt(var));
  return st;
}

// The 2-bit codes of x[0, n) (packed_bytes(n, 2) bytes at out), u_i drawn from `gen` in order.
void ternarize(const float* x, int64_t n, float s, float t, at::Generator& gen, uint8_t* out) {
  const CounterUniforms rng(draw_key(gen));
  float u[kChunk];
  uint8_t code[kChunk];
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t len = std::min(kChunk, n - c0);
    rng.fill(static_cast<uint64_t>(c0), len, u);
    const float* xc = x + c0;
    uint8_t* o = out + c0 / 4;  // c0 is a multiple of 4
    int64_t done = 0;           // elements whose codes are in `o` already
#if defined(__SSE2__)
    // The scalar loops below sixteen codes (four bytes) at a time, the same comparisons:
    // min(t, |x|) is t < |x| ? t : |x|, as std::min(|x|, t). Codes as 32-bit lanes
    // (kept & (1 - negative): 0, 1 or 2), joined by pmaddwd: neighbours c0 + 4·c1 (4 bits), then
    // neighbouring pairs (8 bits: one byte), then the four bytes gathered by two packs.
    const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    const __m128 vs = _mm_set1_ps(s), vt = _mm_set1_ps(t), zero = _mm_setzero_ps();
    const __m128i one = _mm_set1_epi32(1);
    const __m128i join2 = _mm_set1_epi32(1 | 4 << 16), join4 = _mm_set1_epi32(1 | 16 << 16);
    auto codes4 = [&](int64_t k) {
      const __m128 xv = _mm_loadu_ps(xc + k);
      const __m128 a = _mm_min_ps(vt, _mm_and_ps(xv, abs_mask));
      const __m128i kept = _mm_castps_si128(_mm_cmplt_ps(_mm_mul_ps(_mm_loadu_ps(u + k), vs), a));
      const __m128i negative = _mm_castps_si128(_mm_cmplt_ps(xv, zero));
      return _mm_and_si128(kept, _mm_sub_epi32(one, negative));
    };
    for (; done + 16 <= len; done += 16) {
      // A line of the elements a chunk ahead on its way in while these are coded.
      _mm_prefetch(reinterpret_cast<const char*>(xc + done + kChunk), _MM_HINT_T0);
      const __m128i p0 = _mm_madd_epi16(_mm_packs_epi32(codes4(done), codes4(done + 4)), join2);
      const __m128i p1 =
          _mm_madd_epi16(_mm_packs_epi32(codes4(done + 8), codes4(done + 12)), join2);
      const __m128i bytes = _mm_madd_epi16(_mm_packs_epi32(p0, p1), join4);
      const __m128i b16 = _mm_packs_epi32(bytes, bytes);
      const int32_t word = _mm_cvtsi128_si32(_mm_packus_epi16(b16, b16));
      std::memcpy(o + done / 4, &word, 4);
    }
#endif
    for (int64_t k = done; k < len; ++k) {
      const float a = std::min(std::fabs(xc[k]), t);
      code[k] = u[k] * s < a ? (xc[k] < 0 ? 2 : 1) : 0;
    }
    const int64_t full = len / 4;
    for (int64_t j = done / 4; j < full; ++j)
      o[j] = static_cast<uint8_t>(code[4 * j] | code[4 * j + 1] << 2 | code[4 * j + 2] << 4 |
                                  code[4 * j + 3] << 6);
    if (full * 4 < len) {
      uint8_t last = 0;
      for (int64_t k = full * 4; k < len; ++k)
        last |= static_cast<uint8_t>(code[k] << (2 * (k - full * 4)));
      o[full] = last;
    }
  }
}

// sum[k] (+)= value[code k] for the n 2-bit codes at `in` (first: sum[k] = 0 + value[code k]).
// A table of the four values of every byte turns each byte into one 16-byte copy or addition.
void add_ternary(const uint8_t* in, int64_t n, const float value[4], bool first, float* sum) {
  float v[4];
  for (int c = 0; c < 4; ++c) v[c] = first ? 0.0f + value[c] : value[c];
  const int64_t full = n / 4;
  if (full >= 256) {
    alignas(16) float quad[256][4];
    for (int b = 0; b < 256; ++b)
      for (int q = 0; q < 4; ++q) quad[b][q] = v[(b >> (2 * q)) & 3];
    if (first) {
      int64_t j = 0;
      // Non-temporal stores (simd.h) from the first aligned group on.
      if (kStreamingStores && stream_output(n)) {
        for (; j < full && (reinterpret_cast<uintptr_t>(sum + 4 * j) & 15); ++j)
          std::memcpy(sum + 4 * j, quad[in[j]], 16);
        for (; j < full; ++j) stream4(sum + 4 * j, quad[in[j]]);
        store_fence();
      }
      for (; j < full; ++j) std::memcpy(sum + 4 * j, quad[in[j]], 16);
    } else {
      for (int64_t j = 0; j < full; ++j)
        for (int q = 0; q < 4; ++q) sum[4 * j + q] += quad[in[j]][q];
    }
  } else {
    for (int64_t j = 0; j < full; ++j)
      for (int q = 0; q < 4; ++q) {
        const float e = v[(in[j] >> (2 * q)) & 3];
        sum[4 * j + q] = first ? e : sum[4 * j + q] + e;
      }
  }
  for (int64_t k = full * 4; k < n; ++k) {
    const float e = v[(in[full] >> (2 * (k - full * 4))) & 3];
    sum[k] = first ? e : sum[k] + e;
  }
}

class TernGrad final : public Algorithm {
 public:
  explicit TernGrad(const TernGradParams& p) : p_(p) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    const int64_t T = static_cast<int64_t>(bucket.entries.size());
    const int P = comm.size();
    at::Generator gen = make_generator(ctx.seed, comm.rank(), ctx.step,
                                       static_cast<uint64_t>(bucket.index));
    std::vector<at::Tensor> g(T);
    std::vector<float> thr(T), scale(T);
    std::vector<int64_t> offset(T + 1);
    offset[0] = p_.scaler_sharing ? 0 : 4 * T;
    for (int64_t i = 0; i < T; ++i) {
      g[i] = bucket.entries[i].grad.detach().to(at::kCPU, at::kFloat).contiguous().reshape({-1});
      const float* x = g[i].data_ptr<float>();
      const int64_t n = g[i].numel();
      const LayerStats st = layer_stats(x, n, p_.clip);
      thr[i] = st.clip;
      // max_k min(|x_k|, c·σ) = min(max_k |x_k|, c·σ): the largest clipped magnitude.
      scale[i] = std::min(st.max_abs, thr[i]);
      offset[i + 1] = offset[i] + packed_bytes(n, 2);
    }
    if (p_.scaler_sharing) {
      at::Tensor all =
          comm.allgather(at::from_blob(scale.data(), {T}, at::kFloat).clone()).contiguous();
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
    at::Tensor all = comm.allgather(mine).contiguous();
    const uint8_t* ap = all.data_ptr<uint8_t>();
    static const float kTernary[4] = {0.0f, 1.0f, -1.0f, 0.0f};
    for (int64_t i = 0; i < T; ++i) {
      const int64_t n = g[i].numel();
      auto& e = bucket.entries[i];
      // Decode straight into the gradient when it is a plain CPU fp32 tensor (its values were
      // encoded above and are not read again).
      const bool direct = e.grad.device().is_cpu() && e.grad.scalar_type() == at::kFloat &&
                          e.grad.is_contiguous();
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
  TernGradParams p_;
};

}  // namespace

AlgorithmInfo terngrad_algorithm() {
  return algorithm_info<TernGrad, TernGradParams>(
      "terngrad",
      "TernGrad: per-layer clipping at c*sigma, stochastic ternarization to {-s, 0, s} (2 bits "
      "per element, scaler shared across workers), allgather, decode and average",
      "Wen, Xu, Yan, Wu, Wang, Chen, Li. TernGrad: Ternary Gradients to Reduce Communication in "
      "Distributed Deep Learning. NeurIPS 2017");
}

}  // namespace cedar
