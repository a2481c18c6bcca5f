#include "runner/train/buckets.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cedar {

std::vector<GradBucket> make_buckets(const std::vector<NamedTensor>& params, int64_t bucket_bytes) {
  return buckets_of_groups(params, size_groups(fusion_layers(params), bucket_bytes));
}

std::vector<GradBucket> buckets_of_groups(const std::vector<NamedTensor>& params,
                                          const FusionGroups& groups) {
  int64_t covered = 0;
  for (const int64_t n : groups) {
    if (n <= 0) throw std::invalid_argument("buckets: an empty bucket");
    covered += n;
  }
  if (covered != static_cast<int64_t>(params.size()))
    throw std::invalid_argument("buckets: the groups hold " + std::to_string(covered) +
                                " parameters, the model " + std::to_string(params.size()));
  std::vector<GradBucket> buckets;
  auto next = params.rbegin();
  for (size_t b = 0; b < groups.size(); ++b) {
    const auto end = next + groups[b];
    int64_t numel = 0;
    for (auto it = next; it != end; ++it) numel += it->tensor.numel();
    GradBucket bucket;
    bucket.index = static_cast<int64_t>(b);
    bucket.flat = at::zeros({numel}, params.front().tensor.options().dtype(at::kFloat));
    int64_t off = 0;
    for (; next != end; ++next) {
      const int64_t n = next->tensor.numel();
      bucket.entries.push_back(
          {next->name, next->tensor, bucket.flat.narrow(0, off, n).view(next->tensor.sizes())});
      off += n;
    }
    buckets.push_back(std::move(bucket));
  }
  return buckets;
}

std::vector<FusionLayer> fusion_layers(const std::vector<NamedTensor>& params,
                                       const std::vector<double>& ready_seconds) {
  if (!ready_seconds.empty() && ready_seconds.size() != params.size())
    throw std::invalid_argument("fusion: " + std::to_string(ready_seconds.size()) +
                                " gradient times for " + std::to_string(params.size()) +
                                " parameters");
  std::vector<FusionLayer> layers;
  double before = 0;
  for (size_t i = params.size(); i-- > 0;) {
    const double ready = ready_seconds.empty() ? 0 : std::max(before, ready_seconds[i]);
    layers.push_back({params[i].tensor.numel() * 4, ready - before});
    before = ready;
  }
  return layers;
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
