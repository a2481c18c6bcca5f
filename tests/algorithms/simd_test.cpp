// The codecs' shared reductions (algorithms/codecs/simd.h) against their documented order, on
// every instruction set the CPU runs: sums of eight fp64 partial sums added pairwise, maxima of |x|
// with NaNs skipped. QSGD's norms, TernGrad's statistics and LAG's squared distances are computed
// through them, so their order fixes those results' bits. EF-signSGD's ‖p‖₁ (add_abs_in_order) is
// the plain element-order loop's, bit for bit, in each of its forms: on Gaussian, heavy-tailed and
// random-bit inputs, runs of exact ties, starts in every regime (zero, negative, huge, tiny,
// infinite, NaN) and sums that cross a power of two; add_abs_in_order_with_signs gives that sum
// and pack_signs's bits in each of its forms, on odd sizes at unaligned addresses.
#include "algorithms/codecs/simd.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/compressor.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::values_of;

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

// The same bits, or both NaN: which NaN payload an addition propagates depends on the order the
// compiler gives its operands, which no kernel here fixes.
bool same_double(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

TEST(SimdSums, SquaredDistancesFollowTheDocumentedOrder) {
  for (int64_t n : {0, 1, 7, 8, 9, 17, 1001, 4099}) {
    at::Tensor x = at::randn({n}, make_generator(n, 4, 0)) * 3.0f;
    at::Tensor y = at::randn({n}, make_generator(n, 5, 0));
    if (n > 9) {
      x.data_ptr<float>()[3] = -0.0f;
      y.data_ptr<float>()[3] = 0.0f;
      y.data_ptr<float>()[8] = 1e30f;  // a difference beyond fp32 products
    }
    const float* px = x.data_ptr<float>();
    double sq[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < n; ++i) {
      const double d = px[i] - y.data_ptr<float>()[i];  // the fp32 difference, widened
      sq[i % 8] += d * d;
    }
    const double want = ((sq[0] + sq[1]) + (sq[2] + sq[3])) + ((sq[4] + sq[5]) + (sq[6] + sq[7]));
    EXPECT_TRUE(same_double(squared_distance(px, y.data_ptr<float>(), n), want)) << n;
    at::Tensor copy = y.clone();
    EXPECT_TRUE(same_double(squared_distance_then_copy(px, copy.data_ptr<float>(), n), want)) << n;
    EXPECT_TRUE(torch::equal(copy, x)) << n;
    for (bool avx2 : {false, true}) {
      if (avx2 && !simd_impl::have_avx2()) continue;
      auto form = avx2 ? simd_impl::squared_distance_avx2 : simd_impl::squared_distance_sse2;
      at::Tensor z = y.clone();
      EXPECT_TRUE(same_double(form(px, z.data_ptr<float>(), n, false), want)) << n << avx2;
      EXPECT_TRUE(torch::equal(z, y)) << n << avx2;
      EXPECT_TRUE(same_double(form(px, z.data_ptr<float>(), n, true), want)) << n << avx2;
      EXPECT_TRUE(torch::equal(z, x)) << n << avx2;
      // With the difference and a copy written elsewhere: y unchanged, diff = x − y as LibTorch's
      // fp32 subtraction gives it.
      auto split = avx2 ? simd_impl::squared_distance_with_difference_avx2
                        : simd_impl::squared_distance_with_difference_sse2;
      at::Tensor diff = at::full({n}, 7.0f), to = at::full({n}, 7.0f), w = y.clone();
      EXPECT_TRUE(same_double(
          split(px, w.data_ptr<float>(), diff.data_ptr<float>(), to.data_ptr<float>(), n), want))
          << n << avx2;
      EXPECT_TRUE(torch::equal(w, y)) << n << avx2;
      EXPECT_TRUE(torch::equal(to, x)) << n << avx2;
      EXPECT_TRUE(torch::equal(diff, x - y)) << n << avx2;
      // Taking y into x: diff = x − y, then x = y, bit for bit (the signed zero included).
      auto take = avx2 ? simd_impl::squared_distance_then_take_avx2
                       : simd_impl::squared_distance_then_take_sse2;
      at::Tensor taker = x.clone(), error = at::full({n}, 7.0f);
      EXPECT_TRUE(same_double(
          take(taker.data_ptr<float>(), y.data_ptr<float>(), error.data_ptr<float>(), n), want))
          << n << avx2;
      EXPECT_TRUE(testing::same_bits(taker, y)) << n << avx2;
      EXPECT_TRUE(testing::same_bits(error, x - y)) << n << avx2;
    }
    at::Tensor taker = x.clone(), error = at::empty({n});
    EXPECT_TRUE(same_double(squared_distance_then_take(taker.data_ptr<float>(), y.data_ptr<float>(),
                                                       error.data_ptr<float>(), n),
                            want))
        << n;
    EXPECT_TRUE(testing::same_bits(taker, y) && testing::same_bits(error, x - y)) << n;
    at::Tensor diff = at::empty({n}), to = at::empty({n});
    EXPECT_TRUE(
        same_double(squared_distance_with_difference(
                        px, y.data_ptr<float>(), diff.data_ptr<float>(), to.data_ptr<float>(), n),
                    want))
        << n;
    EXPECT_TRUE(torch::equal(diff, x - y) && torch::equal(to, x)) << n;
  }
}

// The loop add_abs_in_order stands for.
double abs_loop(double s, const std::vector<float>& x) {
  for (float v : x) s += std::fabs(v);
  return s;
}

float float_of_bits(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

// Every form of add_abs_in_order from s over x against the loop.
void expect_the_loop(double s, const std::vector<float>& x, const std::string& what) {
  const double want = abs_loop(s, x);
  const int64_t n = static_cast<int64_t>(x.size());
  EXPECT_TRUE(same_double(add_abs_in_order(s, x.data(), n), want)) << what;
  EXPECT_TRUE(same_double(simd_impl::add_abs_in_order_portable(s, x.data(), n), want)) << what;
  EXPECT_TRUE(same_double(simd_impl::add_abs_in_order_sse2(s, x.data(), n), want)) << what;
  if (simd_impl::have_avx2()) {
    EXPECT_TRUE(same_double(simd_impl::add_abs_in_order_avx2(s, x.data(), n), want)) << what;
  }
}

TEST(SimdSums, AddAbsInOrderIsTheElementOrderLoop) {
  // Gaussian values over sizes around the 8-value groups and the blocks, and a few million (sums
  // near 2^21, where values below 2^-8 round); magnitudes spread over 2^-40 .. 2^10; random fp32
  // bit patterns (NaN, infinities and subnormals included).
  for (int64_t n : {0, 1, 7, 8, 9, 4095, 4096, 4097, 3 * 4096 + 5, 3000000}) {
    expect_the_loop(0, values_of(at::randn({n}, make_generator(n, 6, 0))), "gaussian");
  }
  const int64_t m = 300007;
  at::Generator gen = make_generator(7, 0, 0);
  at::Tensor exponents = at::randint(-40, 10, {m}, gen).to(at::kFloat);
  expect_the_loop(0, values_of(at::randn({m}, gen) * at::pow(2.0f, exponents)), "heavy tails");
  std::vector<float> bits(m);
  std::vector<float> finite_bits(m);
  for (int64_t i = 0; i < m; ++i) {
    const uint32_t w = static_cast<uint32_t>(i) * 2654435761u;
    bits[static_cast<size_t>(i)] = float_of_bits(w);
    finite_bits[static_cast<size_t>(i)] = float_of_bits(w & 0xBFFFFFFFu);  // |x| < 2
  }
  expect_the_loop(0, finite_bits, "random finite bits");
  expect_the_loop(0, bits, "random bits");

  // Exact ties: from s = 1.5·2^30 (spacing 2^-22), odd multiples of 2^-23 half-way between two
  // sums, among values that are multiples and values that round, in every mix of parities.
  std::vector<float> ties(40000);
  for (size_t i = 0; i < ties.size(); ++i) {
    const uint32_t h = static_cast<uint32_t>(i) * 2246822519u;
    const float k = static_cast<float>(h % 64);
    ties[i] = h % 3 == 0   ? (2 * k + 1) * std::ldexp(1.0f, -23)
              : h % 3 == 1 ? k * std::ldexp(1.0f, -22)
                           : (k + 0.3f) * std::ldexp(1.0f, -20);
  }
  expect_the_loop(1.5 * std::ldexp(1.0, 30), ties, "ties from 1.5*2^30");
  expect_the_loop(std::ldexp(1.0, 30), ties, "ties from 2^30");

  // Starts in every regime, over values that cross powers of two.
  const std::vector<float> ones(5000, 1.0f), gaussian = values_of(at::randn({5000}));
  const double inf = std::numeric_limits<double>::infinity();
  for (double s : {0.0, -0.0, -5.0, 1e300, 1e-300, inf, -inf, std::nan(""), std::ldexp(1.0, 20) - 3,
                   std::ldexp(1.0, 53) - 3, std::ldexp(1.0, 53)}) {
    expect_the_loop(s, ones, "ones from " + std::to_string(s));
    expect_the_loop(s, gaussian, "gaussian from " + std::to_string(s));
  }
  // fp32 subnormals from a tiny start; zeros from zero; infinities and the largest floats.
  std::vector<float> tiny(5000), zeros(5000, 0.0f), big(5000, std::numeric_limits<float>::max());
  for (size_t i = 0; i < tiny.size(); ++i) tiny[i] = float_of_bits(static_cast<uint32_t>(i * 977));
  expect_the_loop(1e-44, tiny, "subnormals");
  expect_the_loop(0, zeros, "zeros");
  expect_the_loop(-0.0, zeros, "zeros from -0");
  expect_the_loop(0, big, "largest floats");
  big[4000] = std::numeric_limits<float>::infinity();
  expect_the_loop(0, big, "an infinity");
}

// Every form of add_abs_in_order_with_signs from s over x: the loop's sum and pack_signs's bits,
// nothing written past the last byte of bits. x is copied to `offset` floats past a 32-byte
// boundary and the bits to `offset` bytes past one, so that no form relies on alignment.
void expect_the_loop_and_signs(double s, const std::vector<float>& x, const std::string& what) {
  const double want = abs_loop(s, x);
  const int64_t n = static_cast<int64_t>(x.size()), bytes = packed_bytes(n, 1);
  std::vector<uint8_t> want_bits(static_cast<size_t>(bytes));
  simd_impl::pack_signs_sse2(x.data(), n, want_bits.data());
  using Form = double (*)(double, const float*, int64_t, uint8_t*);
  std::vector<std::pair<std::string, Form>> forms = {
      {"dispatched", add_abs_in_order_with_signs},
      {"portable", simd_impl::add_abs_in_order_with_signs_portable},
      {"sse2", simd_impl::add_abs_in_order_with_signs_sse2}};
  if (simd_impl::have_avx2())
    forms.emplace_back("avx2", simd_impl::add_abs_in_order_with_signs_avx2);
  for (int offset : {0, 1, 3}) {
    std::vector<float> xs(static_cast<size_t>(n + 16));
    float* px = xs.data() + (8 - reinterpret_cast<uintptr_t>(xs.data()) / 4 % 8) % 8 + offset;
    std::copy(x.begin(), x.end(), px);
    for (const auto& [name, form] : forms) {
      std::vector<uint8_t> bits(static_cast<size_t>(bytes + 40), 0xa5);
      uint8_t* pb =
          bits.data() + (32 - reinterpret_cast<uintptr_t>(bits.data()) % 32) % 32 + offset;
      const std::string where = what + ", " + name + ", offset " + std::to_string(offset);
      EXPECT_TRUE(same_double(form(s, px, n, pb), want)) << where;
      EXPECT_TRUE(std::equal(want_bits.begin(), want_bits.end(), pb)) << where;
      EXPECT_EQ(pb[bytes], 0xa5) << where;
    }
  }
}

TEST(SimdSums, AddAbsInOrderWithSignsIsTheLoopAndPackSigns) {
  for (int64_t n : {0, 1, 7, 8, 9, 31, 33, 4095, 4096, 4097, 3 * 4096 + 5, 100003}) {
    at::Tensor v = at::randn({n}, make_generator(n, 8, 0));
    if (n > 9) {
      v[3] = -0.0f;
      v[5] = 0.0f;
      v[n - 2] = std::numeric_limits<float>::quiet_NaN();
    }
    expect_the_loop_and_signs(0, values_of(v), "gaussian, n " + std::to_string(n));
  }
  // Random bit patterns (NaNs, infinities, subnormals): groups fail and blocks give up on their
  // runs part-way, leaving their bits to the loop; ties from a start on a power of two; starts
  // that skip the runs (negative, NaN) or cross a power of two.
  const int64_t m = 20011;
  std::vector<float> bits(m), ties(m);
  for (int64_t i = 0; i < m; ++i) {
    bits[static_cast<size_t>(i)] = float_of_bits(static_cast<uint32_t>(i) * 2654435761u);
    // From 2^30 the sums' spacing is 2^-22: odd multiples of 2^-23 are ties, now and then and
    // densely in [15000, 16000), among multiples of 2^-22 and values that round.
    const bool tie = i % 97 == 0 || (i >= 15000 && i < 16000);
    const float k = static_cast<float>(i % 64);
    ties[static_cast<size_t>(i)] = tie     ? (2 * k + 1) * std::ldexp(1.0f, -23)
                                   : i % 2 ? k * std::ldexp(1.0f, -22)
                                           : (k + 0.3f) * std::ldexp(1.0f, -20);
  }
  expect_the_loop_and_signs(0, bits, "random bits");
  expect_the_loop_and_signs(std::ldexp(1.0, 30), ties, "ties from 2^30");
  const std::vector<float> gaussian = values_of(at::randn({5001}, make_generator(9, 0, 0)));
  for (double s : {-5.0, std::nan(""), std::ldexp(1.0, 12) - 3, 1e300})
    expect_the_loop_and_signs(s, gaussian, "gaussian from " + std::to_string(s));
}

}  // namespace
}  // namespace cedar
