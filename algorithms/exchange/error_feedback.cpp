#include "algorithms/exchange/error_feedback.h"

#include <ATen/ATen.h>

#include "algorithms/codecs/simd.h"

namespace cedar {

at::Tensor ErrorFeedback::compress(const std::string& key, const at::Tensor& g, Compressor& c,
                                   at::Generator& gen, float scale) {
  at::Tensor& e = memory_[key];
  if (!e.defined()) e = at::zeros_like(g);
  if (e.device() != g.device()) e = e.to(g.device());  // a memory restored on another device
  const bool in_place = e.device().is_cpu() && e.scalar_type() == at::kFloat && e.is_contiguous() &&
                        e.sizes() == g.sizes();
  if (!in_place || (scale != 1.0f && !(g.scalar_type() == at::kFloat && g.is_contiguous()))) {
    at::Tensor p = (scale != 1.0f ? g * scale : g) + e;
    at::Tensor payload = c.compress(p, gen);
    e = p - c.decompress(payload, p.numel()).view(p.sizes());  // decoded where p is
    return payload;
  }
  // The same operations in the memory itself: p = e + g (the same sum as g + e), its encoding
  // (in one pass where the codec forms p as it encodes), then e = p - D(C(p)), which a sparse
  // codec computes at its indices only.
  at::Tensor payload;
  if (cpu_fp32(e, g)) payload = c.compress_accumulated(e, g, scale, gen);
  if (!payload.defined()) {
    if (scale == 1.0f) {
      e.add_(g);
    } else {
      accumulate_scaled(e.data_ptr<float>(), g.data_ptr<float>(), e.numel(), scale);
    }
    payload = c.compress(e, gen);
  }
  c.subtract_decoded(payload, e, scratch_);
  return payload;
}

const at::Tensor& ErrorFeedback::memory(const std::string& key) const {
  static const at::Tensor undefined;
  auto it = memory_.find(key);
  return it == memory_.end() ? undefined : it->second;
}

}  // namespace cedar
