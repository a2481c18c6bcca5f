// Top-k's rule (magnitude_topk.h) as tensor ops, for tensors on any device: the k-th largest
// magnitude key, every element above it, and the lowest-index elements equal to it up to k.
#include <ATen/ATen.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/magnitude_topk.h"

namespace cedar {

at::Tensor magnitude_topk_indices(const at::Tensor& x, int64_t k) {
  const at::Tensor v = x.detach().to(at::kFloat).contiguous().reshape({-1});
  const int64_t n = v.numel();
  if (k < 0 || k > n || n > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("magnitude top-k: " + std::to_string(k) + " of " +
                                std::to_string(n) + " elements (needs 0 <= k <= n < 2^31)");
  const at::TensorOptions longs = at::TensorOptions().dtype(at::kLong).device(v.device());
  if (k == 0) return at::empty({0}, longs);
  if (k == n) return at::arange(n, longs);
  // magnitude_key: the bits of |x| as int32 (±0 equal, a NaN above +inf).
  const at::Tensor key = v.view(at::kInt).bitwise_and(0x7fffffff);
  const at::Tensor kth = std::get<0>(at::topk(key, k, 0, true, false)).min();
  const at::Tensor above = key.gt(kth), tie = key.eq(kth);
  const at::Tensor room = above.sum().neg().add(k);  // ties kept: k − (count above)
  return above.logical_or(tie.logical_and(tie.cumsum(0).le(room))).nonzero().reshape({-1});
}

}  // namespace cedar
