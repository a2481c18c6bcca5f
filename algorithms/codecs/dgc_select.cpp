#include "algorithms/codecs/dgc_select.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "algorithms/codecs/magnitude_scan.h"
#include "algorithms/codecs/sparse_codec.h"

namespace cedar {
namespace {

// Ascending indices i with |v_i| >= thr (thr > 0; a NaN counts as the largest magnitude, as in
// torch::topk): one read pass over v, no |v| or mask buffers (CPU); elsewhere the equivalent
// tensor expression.
at::Tensor indices_at_least(const at::Tensor& v, float thr) {
  if (!v.is_cpu() || !v.is_contiguous() || v.scalar_type() != at::kFloat)
    return at::nonzero(v.abs().ge(thr).logical_or_(v.isnan())).view({-1});
  const float* p = v.data_ptr<float>();
  const int32_t floor = magnitude_key(thr) - 1;  // key >= key(thr) <=> |v_i| >= thr
  const int64_t n = v.numel(), grain = int64_t(1) << 16, chunks = (n + grain - 1) / grain;
  std::vector<std::vector<int64_t>> parts(static_cast<size_t>(chunks));
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      auto& out = parts[static_cast<size_t>(c)];
      for_each_above(p, c * grain, std::min(n, (c + 1) * grain), floor,
                     [&](int64_t i) { out.push_back(i); });
    }
  });
  int64_t total = 0;
  for (const auto& part : parts) total += static_cast<int64_t>(part.size());
  at::Tensor idx = at::empty({total}, at::kLong);
  int64_t* q = idx.data_ptr<int64_t>();
  for (const auto& part : parts) q = std::copy(part.begin(), part.end(), q);
  return idx;
}

// |v[start]|, |v[start + stride]|, ... (v.slice(0, start, n, stride).abs()), on the CPU by
// strided_magnitudes (magnitude_scan.h).
at::Tensor sample_magnitudes(const at::Tensor& v, int64_t start, int64_t stride) {
  const int64_t n = v.numel();
  if (!v.is_cpu() || !v.is_contiguous() || v.scalar_type() != at::kFloat || start >= n)
    return v.slice(0, start, n, stride).abs();
  const int64_t count = (n - start - 1) / stride + 1;
  at::Tensor out = at::empty({count}, at::kFloat);
  strided_magnitudes(v.data_ptr<float>() + start, count, stride, out.data_ptr<float>());
  return out;
}

}  // namespace

at::Tensor dgc_select(const at::Tensor& v, int64_t k, double density, double sample_ratio,
                      double lower_bound, double upper_bound, int64_t max_adaptation_iters,
                      at::Generator& gen) {
  const int64_t n = v.numel();
  if (k >= n) return at::arange(n, v.options().dtype(at::kLong));
  auto exact = [&] {
    at::Tensor idx = std::get<1>(at::topk(v.abs(), k, 0, true, false));
    return std::get<0>(at::sort(idx));
  };
  const int64_t target =
      std::max(keep_count(n, sample_ratio), static_cast<int64_t>(std::ceil(2.0 / density - 1e-9)));
  int64_t stride = n / std::max<int64_t>(target, 1);
  if (stride % 2 == 0) --stride;  // odd: no aliasing with power-of-two tensor dimensions
  if (stride <= 1) return exact();
  const int64_t start = at::randint(stride, {1}, gen, at::kLong).item<int64_t>();
  at::Tensor samples = sample_magnitudes(v, start, stride);
  // The sample's ⌈density·#samples⌉-th largest, moved down by two standard deviations of that
  // count (≈ Poisson) so that usually at least k survive the first pass over |v|.
  const int64_t ks = keep_count(samples.numel(), density);
  const int64_t rank = std::min<int64_t>(
      samples.numel(), ks + static_cast<int64_t>(std::ceil(2.0 * std::sqrt(double(ks)))));
  float thr = std::get<0>(at::topk(samples, rank, 0, true, false)).min().item<float>();
  if (!(thr > 0)) return exact();  // mostly zeros: every coordinate would survive
  at::Tensor idx = indices_at_least(v, thr);
  for (int64_t it = 0; idx.numel() < k && it < max_adaptation_iters; ++it) {
    thr *= static_cast<float>(lower_bound);
    idx = indices_at_least(v, thr);
  }
  if (idx.numel() < k) return exact();
  if (static_cast<double>(idx.numel()) > upper_bound * static_cast<double>(k)) {
    // Raise the threshold to the k-th largest candidate: top-k among the candidates only.
    at::Tensor pick = std::get<1>(at::topk(v.index_select(0, idx).abs(), k, 0, true, false));
    idx = std::get<0>(at::sort(idx.index_select(0, pick)));
  }
  return idx;
}

}  // namespace cedar
