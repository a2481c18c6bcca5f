// The codecs' shared reductions (algorithms/codecs/simd.h) against their documented order, on every
// instruction set the CPU runs: sums of eight fp64 partial sums added pairwise, maxima of |x| with
// NaNs skipped. QSGD's norms and
// TernGrad's statistics are computed through them, so their order fixes those codecs' bits.
#include "algorithms/codecs/simd.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "algorithms/codecs/compressor.h"

namespace cedar {
namespace {

// The eight-partial-sum order of simd.h written out plainly: element i into sum i mod 8 (fp64),
// added ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)); maxima of |x| with NaNs skipped. By every
// instruction set this CPU runs (Isa), with sizes around their vector widths.
TEST(SimdSums, SumsAndMaximaFollowTheDocumentedOrder) {
  for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 512, 1001}) {
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
    for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx2Vaes}) {
      if (!isa_supported(isa)) continue;
      const std::string where =
          std::to_string(n) + " elements, isa " + std::to_string(static_cast<int>(isa));
      EXPECT_TRUE(same(sum_of_squares(p, n, isa), total(sq))) << where;
      EXPECT_EQ(max_abs(p, n, isa), mx) << where;
      const ShiftedSums s = shifted_sums(p, n, k, isa);
      EXPECT_TRUE(same(s.sum, total(d1))) << where;
      EXPECT_TRUE(same(s.sum_sq, total(d2))) << where;
      EXPECT_EQ(s.max_abs, mx) << where;
    }
  }
}

// Bucket by bucket (QSGD's l2 norms, squared): each bucket's sum in the documented order, also for
// a shorter last bucket and from any first bucket.
TEST(SimdSums, BucketSumsFollowTheDocumentedOrder) {
  const int64_t n = 3001;
  at::Tensor x = at::randn({n}, make_generator(n, 4, 0));
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < n; i += 37) p[i] *= 1e6f;  // magnitudes far apart: order shows in fp64
  auto same = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  for (int64_t bucket : {1, 5, 8, 12, 64, 512, 1000, 5000}) {
    const int64_t m = (n - 1) / bucket + 1;
    std::vector<double> want(m, 0.0);
    for (int64_t b = 0; b < m; ++b) {
      double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t i = b * bucket; i < std::min(n, (b + 1) * bucket); ++i)
        s[(i - b * bucket) % 8] += static_cast<double>(p[i]) * p[i];
      want[b] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    }
    for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx2Vaes}) {
      if (!isa_supported(isa)) continue;
      for (int64_t first : {int64_t{0}, m / 3}) {
        std::vector<double> got(m - first);
        bucket_sums_of_squares(p, n, bucket, first, m, got.data(), isa);
        for (int64_t b = first; b < m; ++b)
          ASSERT_TRUE(same(got[b - first], want[b]))
              << "bucket " << b << " of " << bucket << ", isa " << static_cast<int>(isa);
      }
    }
  }
}

}  // namespace
}  // namespace cedar
