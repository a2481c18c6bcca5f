#include "algorithms/codecs/random_subset.h"

#include <stdexcept>
#include <string>

namespace cedar {
namespace {

// The subset itself, inlined into the two forms below: for CPUs with POPCNT and for the others.
CEDAR_ALWAYS_INLINE void floyd_from_key(uint64_t key, int64_t n, int64_t k, int64_t* out,
                                        std::vector<uint64_t>& bits) {
  CounterIntegers integers(key);
  floyd_subset(
      n, k, [&](uint32_t range) { return integers.below(range); }, out, bits);
}

CEDAR_POPCNT_TARGET void floyd_from_key_popcnt(uint64_t key, int64_t n, int64_t k, int64_t* out,
                                               std::vector<uint64_t>& bits) {
  floyd_from_key(key, n, k, out, bits);
}

void floyd_from_key_portable(uint64_t key, int64_t n, int64_t k, int64_t* out,
                             std::vector<uint64_t>& bits) {
  floyd_from_key(key, n, k, out, bits);
}

}  // namespace

void UniformSubset::draw(uint64_t key, int64_t n, int64_t k, int64_t* out) {
  if (k < 0 || k > n || n > int64_t{0xffffffff})
    throw std::invalid_argument("uniform_subset: " + std::to_string(k) + " of " +
                                std::to_string(n) + " elements (needs 0 <= k <= n < 2^32)");
  (cpu_has_popcnt() ? floyd_from_key_popcnt : floyd_from_key_portable)(key, n, k, out, bits_);
}

void uniform_subset(uint64_t key, int64_t n, int64_t k, int64_t* out) {
  UniformSubset().draw(key, n, k, out);
}

}  // namespace cedar
