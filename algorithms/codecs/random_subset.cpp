#include "algorithms/codecs/random_subset.h"

#include <stdexcept>
#include <string>

namespace cedar {

void UniformSubset::draw(uint64_t key, int64_t n, int64_t k, int64_t* out) {
  if (k < 0 || k > n || n > int64_t{0xffffffff})
    throw std::invalid_argument("uniform_subset: " + std::to_string(k) + " of " +
                                std::to_string(n) + " elements (needs 0 <= k <= n < 2^32)");
  CounterIntegers integers(key);
  floyd_subset(
      n, k, [&](uint32_t range) { return integers.below(range); }, out, bits_);
}

void uniform_subset(uint64_t key, int64_t n, int64_t k, int64_t* out) {
  UniformSubset().draw(key, n, k, out);
}

}  // namespace cedar
