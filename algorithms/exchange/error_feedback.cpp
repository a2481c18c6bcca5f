#include "algorithms/exchange/error_feedback.h"

#include <ATen/ATen.h>

namespace cedar {

at::Tensor ErrorFeedback::compress(const std::string& key, const at::Tensor& g, Compressor& c,
                                   at::Generator& gen) {
  at::Tensor& e = memory_[key];
  if (!e.defined()) e = at::zeros_like(g);
  if (!(e.device().is_cpu() && e.scalar_type() == at::kFloat && e.is_contiguous() &&
        e.sizes() == g.sizes())) {
    at::Tensor p = g + e;
    at::Tensor payload = c.compress(p, gen);
    e = p - c.decompress(payload, p.numel()).to(p.device());  // decoders work on the CPU
    return payload;
  }
  // The same operations on reused storage: p = g + e in a scratch buffer, the decoding of its
  // encoding into the memory, then e = p - D(C(p)) in place.
  if (scratch_.numel() < g.numel()) scratch_ = at::empty({g.numel()}, at::kFloat);
  at::Tensor p = scratch_.narrow(0, 0, g.numel()).view(g.sizes());
  at::add_out(p, g, e);
  at::Tensor payload = c.compress(p, gen);
  at::Tensor flat = e.view({-1});
  c.decompress_into(payload, flat);
  at::sub_out(e, p, e);
  return payload;
}

const at::Tensor& ErrorFeedback::memory(const std::string& key) const {
  static const at::Tensor undefined;
  auto it = memory_.find(key);
  return it == memory_.end() ? undefined : it->second;
}

}  // namespace cedar
