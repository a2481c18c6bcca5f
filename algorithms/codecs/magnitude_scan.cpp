#include "algorithms/codecs/magnitude_scan.h"

#include <cmath>

namespace cedar {

void strided_magnitudes(const float* p, int64_t count, int64_t stride, float* out) {
  constexpr int64_t kAhead = 16;
  for (int64_t j = 0; j < count; ++j) {
    if (j + kAhead < count) __builtin_prefetch(p + (j + kAhead) * stride);
    out[j] = std::fabs(p[j * stride]);
  }
}

}  // namespace cedar
