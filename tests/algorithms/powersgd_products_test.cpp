// PowerSGD's products (algorithms/powersgd_products.h): whichever form the probe picks for a
// shape, P = M Q and Q = M^T P come out bit for bit as the plain at::mm_out calls give them, on
// operands other than the probe's and at other alignments, for the matrix shapes of VGG-16 and
// ResNet-20 at rank 1, 2 and 4, single and batched (at::bmm_out).
#include "algorithms/powersgd_products.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

#include "algorithms/codecs/compressor.h"

namespace cedar {
namespace {

// n x m matrices as PowerSGD views conv weights (out x in*kh*kw) and linear layers.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    {64, 27},    {64, 576},  {128, 576}, {128, 1152}, {256, 1152}, {256, 2304}, {512, 2304},
    {512, 4608}, {512, 512}, {10, 512},  {16, 144},   {32, 288},   {64, 64},    {3, 1000}};

// `t` copied into fresh storage that starts `floats` elements past a 64-byte boundary.
at::Tensor shifted(const at::Tensor& t, int64_t floats) {
  at::Tensor storage = at::empty({t.numel() + 16});
  at::Tensor out = storage.narrow(0, floats, t.numel()).view(t.sizes());
  out.copy_(t);
  return out;
}

TEST(PowerSgdProducts, EqualThePlainProductsBitForBit) {
  PowerSgdProducts products;
  int transposed = 0, plain = 0;
  for (int64_t rank : {1, 2, 4}) {
    for (const auto& [n, m] : kShapes) {
      for (int trial = 0; trial < 3; ++trial) {
        at::Generator gen = make_generator(5, trial, n * 10000 + m, static_cast<uint64_t>(rank));
        // Alignments differ from trial to trial (the probe sees the first call's).
        const at::Tensor mat = shifted(at::randn({n, m}, gen), 3 * trial);
        const at::Tensor q = shifted(at::randn({m, rank}, gen), trial);
        const at::Tensor pin = shifted(at::randn({n, rank}, gen), 2 * trial);
        at::Tensor p = shifted(at::zeros({n, rank}), trial), p_ref = at::empty({n, rank});
        at::Tensor q_out = shifted(at::zeros({m, rank}), 5 - trial), q_ref = at::empty({m, rank});
        products.left(mat, q, p);
        at::mm_out(p_ref, mat, q);
        products.right(mat, pin, q_out);
        at::mm_out(q_ref, mat.t(), pin);
        const std::string at = std::to_string(n) + " x " + std::to_string(m) + ", rank " +
                               std::to_string(rank) + ", trial " + std::to_string(trial);
        EXPECT_TRUE(at::equal(p, p_ref)) << "P = M Q, " << at;
        EXPECT_TRUE(at::equal(q_out, q_ref)) << "Q = M^T P, " << at;
      }
      for (int c : {products.left_choice(n, m, rank), products.right_choice(n, m, rank)}) {
        ASSERT_NE(c, -1) << n << " x " << m << ": a shape met was not probed";
        (c == 1 ? transposed : plain) += 1;
      }
    }
  }
  // Which forms this BLAS gets is its own affair; the counts go into the test's XML record.
  ::testing::Test::RecordProperty("transposed_forms", transposed);
  ::testing::Test::RecordProperty("plain_forms", plain);
}

TEST(PowerSgdProducts, BatchesEqualThePlainBatchedProductsBitForBit) {
  PowerSgdProducts products;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 27},    {64, 576},  {256, 2304},
                                                           {512, 4608}, {512, 512}, {16, 144}};
  for (int64_t batch : {1, 2, 5}) {
    for (const auto& [n, m] : shapes) {
      for (int trial = 0; trial < 2; ++trial) {
        at::Generator gen = make_generator(6, trial, n * 10000 + m, static_cast<uint64_t>(batch));
        const at::Tensor mats = shifted(at::randn({batch, n, m}, gen), 7 * trial);
        const at::Tensor q = shifted(at::randn({batch, m, 2}, gen), trial);
        const at::Tensor pin = shifted(at::randn({batch, n, 2}, gen), 3 * trial);
        at::Tensor p = shifted(at::zeros({batch, n, 2}), trial), p_ref = at::empty({batch, n, 2});
        at::Tensor q_out = shifted(at::zeros({batch, m, 2}), 2), q_ref = at::empty({batch, m, 2});
        products.left(mats, q, p);
        at::bmm_out(p_ref, mats, q);
        products.right(mats, pin, q_out);
        at::bmm_out(q_ref, mats.transpose(1, 2), pin);
        const std::string at = std::to_string(batch) + " x " + std::to_string(n) + " x " +
                               std::to_string(m) + ", trial " + std::to_string(trial);
        EXPECT_TRUE(at::equal(p, p_ref)) << "P = M Q, " << at;
        EXPECT_TRUE(at::equal(q_out, q_ref)) << "Q = M^T P, " << at;
      }
      EXPECT_NE(products.left_choice(n, m, 2, batch), -1);
      EXPECT_EQ(products.left_choice(n, m, 2), -1) << "a batch's choice is not a single matrix's";
    }
  }
}

TEST(PowerSgdProducts, AShapeNotMetIsNotProbed) {
  PowerSgdProducts products;
  EXPECT_EQ(products.left_choice(7, 9, 2), -1);
  const at::Tensor mat = at::ones({7, 9}), q = at::ones({9, 2});
  at::Tensor p = at::empty({7, 2});
  products.left(mat, q, p);
  EXPECT_NE(products.left_choice(7, 9, 2), -1);
  EXPECT_TRUE(at::equal(p, at::full({7, 2}, 9.0f)));
}

}  // namespace
}  // namespace cedar
