#include "runner/train/buckets.h"

#include <ATen/ATen.h>

namespace cedar {

std::vector<GradBucket> make_buckets(const std::vector<NamedTensor>& params, int64_t bucket_bytes) {
  std::vector<std::vector<const NamedTensor*>> groups;
  int64_t current = 0;
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    int64_t bytes = it->tensor.numel() * 4;
    if (groups.empty() || (current > 0 && current + bytes > bucket_bytes)) {
      groups.emplace_back();
      current = 0;
    }
    groups.back().push_back(&*it);
    current += bytes;
  }
  std::vector<GradBucket> buckets;
  for (size_t b = 0; b < groups.size(); ++b) {
    int64_t numel = 0;
    for (const auto* p : groups[b]) numel += p->tensor.numel();
    GradBucket bucket;
    bucket.index = static_cast<int64_t>(b);
    bucket.flat = at::zeros({numel}, params.front().tensor.options().dtype(at::kFloat));
    int64_t off = 0;
    for (const auto* p : groups[b]) {
      int64_t n = p->tensor.numel();
      bucket.entries.push_back(
          {p->name, p->tensor, bucket.flat.narrow(0, off, n).view(p->tensor.sizes())});
      off += n;
    }
    buckets.push_back(std::move(bucket));
  }
  return buckets;
}

void gather_gradients(std::vector<GradBucket>& buckets) {
  for (auto& b : buckets)
    for (auto& e : b.entries) {
      const at::Tensor& g = e.param.grad();
      if (g.defined())
        e.grad.copy_(g);
      else
        e.grad.zero_();
    }
}

}  // namespace cedar
