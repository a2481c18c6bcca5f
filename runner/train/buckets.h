#pragma once
// Gradient fusion buckets: parameters assigned in reverse model order (the order backward
// produces their gradients) to contiguous fp32 buffers of about `bucket_bytes` each.
#include <vector>

#include "algorithms/algorithm.h"

namespace cedar {

std::vector<GradBucket> make_buckets(const std::vector<NamedTensor>& params, int64_t bucket_bytes);

// Copies every parameter's .grad() into its bucket view (zeros where a gradient is missing).
void gather_gradients(std::vector<GradBucket>& buckets);

}  // namespace cedar
