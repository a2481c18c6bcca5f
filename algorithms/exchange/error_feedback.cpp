#include "algorithms/exchange/error_feedback.h"

#include <ATen/ATen.h>

namespace cedar {

at::Tensor ErrorFeedback::compress(const std::string& key, const at::Tensor& g, Compressor& c,
                                   at::Generator& gen) {
  at::Tensor& e = memory_[key];
  if (!e.defined()) e = at::zeros_like(g);
  if (e.device() != g.device()) e = e.to(g.device());  // a memory restored on another device
  if (!(e.device().is_cpu() && e.scalar_type() == at::kFloat && e.is_contiguous() &&
        e.sizes() == g.sizes())) {
    at::Tensor p = g + e;
    at::Tensor payload = c.compress(p, gen);
    e = p - c.decompress(payload, p.numel()).view(p.sizes());  // decoded where p is
    return payload;
  }
  // The same operations in the memory itself: p = e + g (the same sum as g + e), its encoding,
  // then e = p - D(C(p)), which a sparse codec computes at its indices only.
  e.add_(g);
  at::Tensor payload = c.compress(e, gen);
  c.subtract_decoded(payload, e, scratch_);
  return payload;
}

const at::Tensor& ErrorFeedback::memory(const std::string& key) const {
  static const at::Tensor undefined;
  auto it = memory_.find(key);
  return it == memory_.end() ? undefined : it->second;
}

}  // namespace cedar
