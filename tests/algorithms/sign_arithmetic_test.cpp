// Arithmetic on packed sign bits (algorithms/codecs/sign_arithmetic.h) and the sign decoder
// (bit_packing.h's unpack_signs_into): each form (portable, AVX2 where the CPU has it) gives, bit
// for bit, what decoding the bits by hand and applying the LibTorch operation gives, for lengths
// around the forms' 8- and 32-element steps, storage off their alignment, and inputs holding
// signed zeros, infinities, NaNs and subnormals; averages into outputs large enough to be
// streamed, aligned and not.
#include "algorithms/codecs/sign_arithmetic.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "algorithms/codecs/bit_packing.h"
#include "algorithms/codecs/simd.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

const int64_t kLengths[] = {0, 1, 7, 8, 31, 32, 33, 100, 4096 + 37, 3 * 4096 + 1003};

// The forms to check on this CPU.
std::vector<bool> forms() {
  if (simd_impl::have_avx2()) return {false, true};
  return {false};
}
std::string form_name(bool avx2) { return avx2 ? "AVX2" : "portable"; }

// ⌈n/8⌉ random bytes from `seed`.
at::Tensor random_bits(int64_t n, int seed) {
  return at::randint(0, 256, {(n + 7) / 8}, make_generator(seed, 0, n), at::kByte);
}

// The bits decoded by hand.
at::Tensor decoded(const at::Tensor& bits, int64_t n, float one, float zero) {
  return testing::decode_sign_bits(bits.data_ptr<uint8_t>(), n, one, zero);
}

// n normal values with signed zeros, infinities, NaN and subnormals among them, in a buffer one
// element longer than n: offset 1 puts the values 4 bytes off the allocation's alignment.
at::Tensor values(int64_t n, int seed, int64_t offset) {
  at::Tensor buffer = at::randn({n + 1}, make_generator(seed, 1, n));
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            1e-45f,
                            -3e-39f};
  float* p = buffer.data_ptr<float>();
  for (int64_t i = 0; i < n + 1; i += 7) p[i] = specials[(i / 7) % 7];
  return buffer.narrow(0, offset, n);
}

// (one, zero) pairs: a scale's two values, ±1, and a NaN scale's.
const std::pair<float, float> kValues[] = {
    {0.375f, -0.375f}, {1.0f, -1.0f}, {std::numeric_limits<float>::quiet_NaN(), -2.5f}};

TEST(SignArithmetic, SubtractAndAddEqualTheDecodedOperation) {
  for (bool avx2 : forms())
    for (int64_t n : kLengths)
      for (int64_t offset : {0, 1})
        for (const auto& [one, zero] : kValues) {
          const at::Tensor bits = random_bits(n, 3);
          const at::Tensor v = decoded(bits, n, one, zero);
          const std::string what = form_name(avx2) + ", " + std::to_string(n) +
                                   " elements, offset " + std::to_string(offset) + ", one " +
                                   std::to_string(one);
          at::Tensor x = values(n, 4, offset);
          const at::Tensor difference = x - v;
          simd_impl::subtract_signs(avx2, bits.data_ptr<uint8_t>(), n, one, zero,
                                    x.data_ptr<float>());
          EXPECT_TRUE(same_bits(x, difference)) << "subtract, " << what;
          for (float divisor : {1.0f, 3.0f}) {
            at::Tensor sum = values(n, 5, offset);
            at::Tensor expected = sum + v;
            if (divisor != 1.0f) expected = expected / divisor;
            simd_impl::add_signs(avx2, bits.data_ptr<uint8_t>(), n, one, zero,
                                 sum.data_ptr<float>(), divisor);
            EXPECT_TRUE(same_bits(sum, expected)) << "add, divisor " << divisor << ", " << what;
          }
        }
}

TEST(SignArithmetic, AverageIsTheOrderedSumDividedThenDividedAgain) {
  for (bool avx2 : forms())
    for (int64_t n : kLengths)
      for (int streams = 1; streams <= 4; ++streams)
        for (float then : {1.0f, 0.1f}) {
          std::vector<at::Tensor> bits;
          std::vector<const uint8_t*> pointers;
          std::vector<float> one, zero;
          at::Tensor expected;
          for (int s = 0; s < streams; ++s) {
            bits.push_back(random_bits(n, 10 + s));
            pointers.push_back(bits.back().data_ptr<uint8_t>());
            one.push_back(0.25f * static_cast<float>(s + 1));
            zero.push_back(s == 2 ? std::numeric_limits<float>::infinity() : -0.75f);
            const at::Tensor v = decoded(bits.back(), n, one.back(), zero.back());
            expected = s == 0 ? v : expected + v;
          }
          const float divisor = streams > 1 ? static_cast<float>(streams) : 1.0f;
          if (divisor != 1.0f) expected = expected / divisor;
          if (then != 1.0f) expected = expected / then;
          at::Tensor out = at::full({n + 1}, 7.0f).narrow(0, 1, n);
          simd_impl::average_signs(avx2, pointers.data(), one.data(), zero.data(), streams, n,
                                   divisor, then, out.data_ptr<float>());
          EXPECT_TRUE(same_bits(out, expected)) << form_name(avx2) << ", " << n << " elements, "
                                                << streams << " streams, then " << then;
        }
  float out = 0;
  EXPECT_THROW(average_signs(nullptr, nullptr, nullptr, 0, 1, 1.0f, 1.0f, &out),
               std::invalid_argument);
}

// An output larger than kStreamingBytes is written by non-temporal stores where it is aligned:
// the same values as the ordered operations, aligned or not, and nothing past its end.
TEST(SignArithmetic, AverageIntoALargeOutputIsTheSameStreamedOrNot) {
  const int64_t n = kStreamingBytes / 4 + 4096 + 37;
  ASSERT_TRUE(stream_output(n));
  for (bool avx2 : forms())
    for (int streams : {1, 2})
      for (int64_t offset : {0, 1}) {
        std::vector<at::Tensor> bits;
        std::vector<const uint8_t*> pointers;
        const std::vector<float> one = {0.5f, 0.25f}, zero = {-0.5f, -0.125f};
        at::Tensor expected;
        for (int s = 0; s < streams; ++s) {
          bits.push_back(random_bits(n, 20 + s));
          pointers.push_back(bits.back().data_ptr<uint8_t>());
          const at::Tensor v = decoded(bits.back(), n, one[s], zero[s]);
          expected = s == 0 ? v : expected + v;
        }
        const float divisor = static_cast<float>(streams);
        if (streams > 1) expected = expected / divisor;
        expected = expected / 0.1f;
        // 64-byte aligned storage; offset 1 puts the output 4 bytes off it.
        at::Tensor buffer = at::full({n + 2}, 7.0f);
        at::Tensor out = buffer.narrow(0, offset, n);
        simd_impl::average_signs(avx2, pointers.data(), one.data(), zero.data(), streams, n,
                                 streams > 1 ? divisor : 1.0f, 0.1f, out.data_ptr<float>());
        const std::string what = form_name(avx2) + ", " + std::to_string(streams) +
                                 " streams, offset " + std::to_string(offset);
        EXPECT_TRUE(same_bits(out, expected)) << what;
        EXPECT_EQ(buffer[offset + n].item<float>(), 7.0f) << what;
      }
}

TEST(SignArithmetic, MajorityIsTheSignOfTheSumOfPlusAndMinusOnes) {
  for (bool avx2 : forms())
    for (int64_t n : kLengths)
      for (int streams = 1; streams <= 5; ++streams) {
        std::vector<at::Tensor> bits;
        std::vector<const uint8_t*> pointers;
        at::Tensor sum = at::zeros({n});
        for (int s = 0; s < streams; ++s) {
          bits.push_back(random_bits(n, 20 + s));
          pointers.push_back(bits.back().data_ptr<uint8_t>());
          sum += decoded(bits.back(), n, 1.0f, -1.0f);
        }
        at::Tensor out = at::full({n}, 7.0f);
        simd_impl::majority_of_signs(avx2, pointers.data(), streams, n, out.data_ptr<float>());
        EXPECT_TRUE(same_bits(out, sum.sign()))
            << form_name(avx2) << ", " << n << " elements, " << streams << " streams";
      }
  float out = 0;
  EXPECT_THROW(majority_of_signs(nullptr, 0, 1, &out), std::invalid_argument);
}

// Also outputs above kStreamingBytes, whose stores may bypass the cache.
TEST(SignArithmetic, UnpackWritesTheDecodedValues) {
  const int64_t big = kStreamingBytes / 4 + 1003;
  for (bool avx2 : forms())
    for (int64_t n : {int64_t{0}, int64_t{33}, int64_t{4096 + 37}, big})
      for (int64_t offset : {0, 1, 8})
        for (const auto& [one, zero] : kValues) {
          const at::Tensor bits = random_bits(n, 30);
          at::Tensor out = at::full({n + 8}, 7.0f).narrow(0, offset, n);
          simd_impl::unpack_signs_into(avx2, bits.data_ptr<uint8_t>(), n, one, zero,
                                       out.data_ptr<float>());
          EXPECT_TRUE(same_bits(out, decoded(bits, n, one, zero)))
              << form_name(avx2) << ", " << n << " elements, offset " << offset;
        }
}

}  // namespace
}  // namespace cedar
