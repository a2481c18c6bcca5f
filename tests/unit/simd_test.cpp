// The codecs' shared reductions (algorithms/codecs/simd.h) against their documented order: sums of
// eight fp64 partial sums added pairwise, maxima of |x| with NaNs skipped. QSGD's norms and
// TernGrad's statistics are computed through them, so their order fixes those codecs' bits.
#include "algorithms/codecs/simd.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "algorithms/codecs/compressor.h"

namespace cedar {
namespace {

// The eight-partial-sum order of simd.h written out plainly: element i into sum i mod 8 (fp64),
// added ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)); maxima of |x| with NaNs skipped.
TEST(SimdSums, SumsAndMaximaFollowTheDocumentedOrder) {
  for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 512, 1001}) {
    at::Tensor x = at::randn({n}, make_generator(n, 3, 0)) * 1e3f + 7.0f;
    float* p = x.data_ptr<float>();
    if (n > 9) {
      p[2] = -0.0f;
      p[4] = std::numeric_limits<float>::quiet_NaN();
    }
    const double k = n ? p[0] : 0.0;
    double sq[8] = {0, 0, 0, 0, 0, 0, 0, 0}, d1[8] = {0, 0, 0, 0, 0, 0, 0, 0},
           d2[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float mx = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = p[i], d = e - k;
      sq[i % 8] += e * e;
      d1[i % 8] += d;
      d2[i % 8] += d * d;
      if (std::fabs(p[i]) > mx) mx = std::fabs(p[i]);
    }
    auto total = [](const double* s) {
      return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    };
    auto same = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
    EXPECT_TRUE(same(sum_of_squares(p, n), total(sq))) << n;
    EXPECT_EQ(max_abs(p, n), mx) << n;
    const ShiftedSums s = shifted_sums(p, n, k);
    EXPECT_TRUE(same(s.sum, total(d1))) << n;
    EXPECT_TRUE(same(s.sum_sq, total(d2))) << n;
    EXPECT_EQ(s.max_abs, mx) << n;
  }
}

}  // namespace
}  // namespace cedar
