#pragma once
// Test fixtures shared by the algorithm tests: gradient buckets laid out as the trainer lays them
// out (entries are views of one flat fp32 buffer) and seeded random gradients.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/compressor.h"

namespace cedar::testing {

// Zero gradients of the given shapes; entry i is named prefix + i with a zero parameter.
inline GradBucket bucket_of_shapes(const std::vector<std::vector<int64_t>>& shapes,
                                   int64_t index = 0, const std::string& prefix = "t") {
  int64_t total = 0;
  for (const auto& s : shapes) total += c10::multiply_integers(s);
  GradBucket b;
  b.index = index;
  b.flat = torch::zeros({total});
  int64_t off = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const int64_t n = c10::multiply_integers(shapes[i]);
    b.entries.push_back({prefix + std::to_string(i), torch::zeros(shapes[i]),
                         b.flat.narrow(0, off, n).view(shapes[i])});
    off += n;
  }
  return b;
}

// A bucket holding copies of `grads` (entries named p0, p1, ...).
inline GradBucket bucket_of_grads(const std::vector<at::Tensor>& grads, int64_t index = 0) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& g : grads) shapes.push_back(g.sizes().vec());
  GradBucket b = bucket_of_shapes(shapes, index, "p");
  for (size_t i = 0; i < grads.size(); ++i) b.entries[i].grad.copy_(grads[i]);
  return b;
}

// n standard-normal values from the project's seeded generator.
inline torch::Tensor randn_seeded(int64_t n, uint64_t seed) {
  auto gen = make_generator(seed, 0, 0);
  return torch::randn({n}, gen);
}

}  // namespace cedar::testing
