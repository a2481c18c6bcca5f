// The bit packing shared by the quantizers (algorithms/codecs/bit_packing.h): pack_bits /
// unpack_bits round trip every width with exact sizes in the documented little-endian layout and
// reject bad widths, codes and sizes; the fast sign paths pack_signs (each of its SSE2 and AVX2
// forms) / unpack_signs equal pack_bits(x >= 0) and its decoding.
#include "algorithms/codecs/bit_packing.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <limits>

#include "algorithms/codecs/simd.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::same_bits;

TEST(BitPacking, RoundTripsEveryWidthWithExactSizes) {
  at::Generator gen = make_generator(7, 0, 0);
  for (int bits = 1; bits <= kMaxPackedBits; ++bits) {
    for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 1001, 4099}) {
      at::Tensor codes = at::randint(0, int64_t{1} << bits, {n}, gen, at::kLong);
      at::Tensor packed = pack_bits(codes, bits);
      ASSERT_EQ(packed.numel(), (n * bits + 7) / 8) << "bits " << bits << " n " << n;
      ASSERT_EQ(packed.scalar_type(), at::kByte);
      at::Tensor back = unpack_bits(packed, n, bits);
      EXPECT_EQ(back.scalar_type(), bits <= 8 ? at::kByte : at::kInt);
      ASSERT_TRUE(torch::equal(back.to(at::kLong), codes)) << "bits " << bits << " n " << n;
      // Any integer input type gives the same bytes.
      at::Tensor as_int = pack_bits(codes.to(at::kInt), bits);
      EXPECT_TRUE(torch::equal(as_int, packed));
    }
  }
  at::Tensor flags = torch::tensor({true, false, true, true, false, false, false, false, true});
  at::Tensor packed = pack_bits(flags, 1);
  ASSERT_EQ(packed.numel(), 2);
  EXPECT_EQ(packed[0].item<int>(), 0b00001101);
  EXPECT_EQ(packed[1].item<int>(), 1);
}

TEST(BitPacking, LittleEndianLayoutAsDocumented) {
  // b = 2, codes {1, 2, 3}: 1 | 2<<2 | 3<<4.
  at::Tensor p2 = pack_bits(torch::tensor({1, 2, 3}, at::kByte), 2);
  ASSERT_EQ(p2.numel(), 1);
  EXPECT_EQ(p2[0].item<int>(), 0b00111001);
  // b = 3, codes {5, 6, 7}: stream bits 0-2 = 5, 3-5 = 6, 6-8 = 7 (crossing into byte 1).
  at::Tensor p3 = pack_bits(torch::tensor({5, 6, 7}, at::kInt), 3);
  ASSERT_EQ(p3.numel(), 2);
  EXPECT_EQ(p3[0].item<int>(), 5 | 6 << 3 | (7 & 3) << 6);
  EXPECT_EQ(p3[1].item<int>(), 7 >> 2);
  // b = 9: code 0x1ff then 0x001: byte0 = 0xff, byte1 = 0x01 | 0x01 << 1, byte2 = 0.
  at::Tensor p9 = pack_bits(torch::tensor({0x1ff, 1}, at::kInt), 9);
  ASSERT_EQ(p9.numel(), 3);
  EXPECT_EQ(p9[0].item<int>(), 0xff);
  EXPECT_EQ(p9[1].item<int>(), 0x03);
  EXPECT_EQ(p9[2].item<int>(), 0);
}

TEST(BitPacking, RejectsBadWidthsCodesAndSizes) {
  at::Tensor codes = torch::tensor({0, 1, 2, 3}, at::kInt);
  EXPECT_THROW(pack_bits(codes, 0), std::invalid_argument);
  EXPECT_THROW(pack_bits(codes, kMaxPackedBits + 1), std::invalid_argument);
  EXPECT_THROW(pack_bits(codes, 1), std::invalid_argument);  // 2 and 3 need 2 bits
  EXPECT_THROW(pack_bits(torch::tensor({1, -1}, at::kInt), 8), std::invalid_argument);
  EXPECT_THROW(pack_bits(torch::ones({3}), 8), std::invalid_argument);  // floats are not codes
  at::Tensor packed = pack_bits(codes, 2);
  EXPECT_THROW(unpack_bits(packed, 5, 2), std::invalid_argument);
  EXPECT_THROW(unpack_bits(packed, 4, 0), std::invalid_argument);
}

TEST(BitPacking, PackSignsEqualsPackBitsOfGreaterOrEqualZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {0, 1, 7, 8, 9, 63, 1000, 4097}) {
    at::Tensor x = at::randn({n}, make_generator(n, 0, 0));
    float* p = x.data_ptr<float>();
    const float specials[] = {0.0f, -0.0f, nan, inf, -inf, 1e-45f, -1e-45f};
    for (int64_t i = 0; i < n; i += 5) p[i] = specials[(i / 5) % 7];
    const at::Tensor want = pack_bits(x.ge(0), 1);
    at::Tensor mine = at::empty({packed_bytes(n, 1)}, at::kByte);
    pack_signs(p, n, mine.data_ptr<uint8_t>());
    EXPECT_TRUE(same_bits(mine, want)) << n << " elements";
    mine.fill_(0x5a);
    simd_impl::pack_signs_sse2(p, n, mine.data_ptr<uint8_t>());
    EXPECT_TRUE(same_bits(mine, want)) << n << " elements, SSE2";
    if (simd_impl::have_avx2()) {
      mine.fill_(0x5a);
      simd_impl::pack_signs_avx2(p, n, mine.data_ptr<uint8_t>());
      EXPECT_TRUE(same_bits(mine, want)) << n << " elements, AVX2";
    }
  }
}

TEST(BitPacking, UnpackSignsMapsBitsToTheTwoValues) {
  // Bits LSB first: 0b10110001 then 0b01 (10 signs).
  at::Tensor bytes = torch::tensor({0xB1, 0x02}, at::kByte);
  at::Tensor v = unpack_signs(bytes, 10, 2.5f, -0.5f);
  const float expected[] = {2.5f, -0.5f, -0.5f, -0.5f, 2.5f, 2.5f, -0.5f, 2.5f, -0.5f, 2.5f};
  ASSERT_EQ(v.numel(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(v[i].item<float>(), expected[i]) << i;
  EXPECT_THROW(unpack_signs(bytes, 17, 1, -1), std::invalid_argument);  // needs 3 bytes
  EXPECT_THROW(unpack_signs(bytes, -1, 1, -1), std::invalid_argument);
  EXPECT_THROW(unpack_signs(bytes.to(at::kInt), 10, 1, -1), std::invalid_argument);
}

}  // namespace
}  // namespace cedar
