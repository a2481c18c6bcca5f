#pragma once
// The median of a sample: the middle value, or the mean of the two middle values of an even
// count; 0 for an empty sample. No LibTorch here.
#include <algorithm>
#include <vector>

namespace cedar {

inline double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace cedar
