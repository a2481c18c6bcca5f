// The sparse (index, value) encoding shared by DGC, top-k and random-k (algorithms/
// sparse_exchange.h): exact payload sizes and round trips, the keep count, the decoders writing
// into caller storage (small and streamed outputs, aligned or not) and rejecting indices that are
// not strictly ascending within range, and the sparse allgather with the scatter into the
// segments of a joint index space, with its metered bytes.
#include "algorithms/exchange/sparse_exchange.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "algorithms/codecs/randomk_codec.h"
#include "algorithms/codecs/simd.h"
#include "algorithms/codecs/topk_codec.h"
#include "comm/bus_bytes.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

TEST(SparseEncoding, RoundTripAndExactSize) {
  auto idx = torch::tensor({0, 3, 17, 999}, torch::kLong);
  auto val = torch::tensor({1.5f, -2.25f, 1e-30f, 3e30f});
  auto payload = encode_sparse(idx, val);
  EXPECT_EQ(payload.scalar_type(), torch::kByte);
  EXPECT_EQ(payload.numel(), sparse_payload_bytes(4));
  EXPECT_EQ(payload.numel(), 32);
  SparseView s = decode_sparse(payload);
  EXPECT_TRUE(torch::equal(s.indices, idx));
  EXPECT_TRUE(torch::equal(s.values, val));
  EXPECT_EQ(encode_sparse(torch::zeros({0}, torch::kLong), torch::zeros({0})).numel(), 0);
  EXPECT_THROW(decode_sparse(torch::zeros({7}, torch::kByte)), std::invalid_argument);
  EXPECT_THROW(encode_sparse(idx, val.narrow(0, 0, 3)), std::invalid_argument);
  TopKCompressor c(0.25);
  auto dense = c.decompress(payload, 1000);
  EXPECT_EQ(dense.numel(), 1000);
  EXPECT_EQ(dense[17].item<float>(), 1e-30f);
  EXPECT_EQ(dense.ne(0).sum().item<int64_t>(), 4);
}

TEST(SparseEncoding, KeepCount) {
  EXPECT_EQ(keep_count(1000, 0.001), 1);
  EXPECT_EQ(keep_count(1001, 0.001), 2);
  EXPECT_EQ(keep_count(10, 1.0), 10);
  EXPECT_EQ(keep_count(5, 1e-9), 1);
  EXPECT_EQ(keep_count(0, 0.5), 0);
  EXPECT_EQ(keep_count(270, 0.01), 3);
}

// zeros with values[j] at indices[j]: the decoders' expected output.
at::Tensor dense_of(const at::Tensor& indices, const at::Tensor& values, int64_t n) {
  at::Tensor out = at::zeros({n});
  if (indices.numel()) out.index_put_({indices}, values);
  return out;
}

// decompress and decompress_into (into a buffer, at a 4-byte offset too) write zeros and the
// values, bit for bit (−0.0, NaN, denormals), for outputs below and above kStreamingBytes, with
// entries in the unaligned head, in one 16-value line, in neighbouring lines and in the tail.
TEST(SparseEncoding, DecodersWriteZerosAndValuesIntoCallerStorage) {
  const int64_t big = kStreamingBytes / 4 + 1003;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {int64_t{1}, int64_t{20}, int64_t{4099}, big}) {
    std::vector<int64_t> picks = {0,  1,  2,     15,        16,     17,    31,
                                  32, 47, n / 2, n / 2 + 1, n - 17, n - 2, n - 1};
    std::sort(picks.begin(), picks.end());
    picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
    picks.erase(
        std::remove_if(picks.begin(), picks.end(), [&](int64_t i) { return i < 0 || i >= n; }),
        picks.end());
    const at::Tensor idx = at::tensor(picks, at::kLong);
    at::Tensor val = testing::randn_seeded(idx.numel(), 3);
    val[0] = -0.0f;
    if (idx.numel() > 2) {
      val[1] = nan;
      val[2] = 1e-42f;  // a denormal
    }
    const at::Tensor expected = dense_of(idx, val, n);
    TopKCompressor codec(0.5);
    const at::Tensor payload = encode_sparse(idx, val);
    EXPECT_TRUE(testing::same_bits(codec.decompress(payload, n), expected)) << n;
    at::Tensor buffer = at::full({n + 1}, 7.0f);
    for (int64_t offset : {0, 1}) {
      at::Tensor out = buffer.narrow(0, offset, n);
      codec.decompress_into(payload, out);
      EXPECT_TRUE(testing::same_bits(out.contiguous(), expected)) << n << ", offset " << offset;
    }
    // Random-k's values-only payload scatters to the last compress call's indices.
    for (bool values_only : {true, false}) {
      RandomKCompressor rk(0.01, values_only);
      const at::Tensor x = testing::randn_seeded(n, 4);
      at::Generator gen = make_generator(5, 0, 0);
      const at::Tensor p = rk.compress(x, gen);
      const at::Tensor want = dense_of(rk.last_indices(), x.index_select(0, rk.last_indices()), n);
      EXPECT_TRUE(testing::same_bits(rk.decompress(p, n), want)) << n;
      at::Tensor out = buffer.narrow(0, 1, n);
      rk.decompress_into(p, out);
      EXPECT_TRUE(testing::same_bits(out.contiguous(), want)) << n;
    }
  }
}

// An empty payload into an empty tensor (which may have no storage at all) decodes to an empty
// tensor; an index into it is rejected. Under UBSan this also checks that no library call is
// handed the empty tensor's null pointer.
TEST(SparseEncoding, DecodersAcceptEmptyTensors) {
  TopKCompressor codec(0.1);
  const at::Tensor none = encode_sparse(at::zeros({0}, at::kLong), at::zeros({0}));
  EXPECT_EQ(codec.decompress(none, 0).numel(), 0);
  at::Tensor out = at::empty({0});
  codec.decompress_into(none, out);
  EXPECT_EQ(out.numel(), 0);
  const at::Tensor one = encode_sparse(at::tensor({int64_t{0}}, at::kLong), at::ones({1}));
  EXPECT_THROW(codec.decompress(one, 0), std::invalid_argument);
}

// A peer's indices that repeat, descend, are negative or reach numel are rejected by both
// decoders, for small and streamed outputs; so are payloads that are not whole pairs.
TEST(SparseEncoding, DecodersRejectIndicesNotStrictlyAscendingWithinRange) {
  const int64_t big = kStreamingBytes / 4 + 1003;
  for (int64_t n : {int64_t{40}, big}) {
    const std::vector<std::vector<int64_t>> bad = {
        {3, 3}, {5, 4}, {-1, 2}, {0, n}, {n + 5}, {1, 17, 16}, {0, 1, n - 1, n}, {20, 2, 30}};
    TopKCompressor codec(0.1);
    at::Tensor out = at::empty({n});
    for (const auto& indices : bad) {
      const at::Tensor payload = encode_sparse(at::tensor(indices, at::kLong),
                                               at::ones({static_cast<int64_t>(indices.size())}));
      EXPECT_THROW(codec.decompress(payload, n), std::invalid_argument) << n << " " << indices[0];
      EXPECT_THROW(codec.decompress_into(payload, out), std::invalid_argument) << n;
    }
    EXPECT_THROW(codec.decompress(at::zeros({12}, at::kByte), n), std::invalid_argument);
    EXPECT_THROW(codec.decompress(at::zeros({16}, at::kInt), n), std::invalid_argument);
  }
}

TEST(SparseEncoding, AllgatherAndScatterIntoSegments) {
  const int n = 3;
  run_ranks(n, [](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    // Rank r sends index r (value 1) and index r+2 (value r) of a 6-element joint space that is
    // split into segments of 2 and 4 elements.
    auto payload =
        encode_sparse(torch::tensor({r, r + 2}, torch::kLong), torch::tensor({1.0f, float(r)}));
    auto all = allgather_sparse(payload, comm);
    ASSERT_EQ(all.size(), 3u);
    std::vector<torch::Tensor> segments = {torch::zeros({2}), torch::full({4}, 10.0f)};
    for (const auto& s : all) scatter_add_segments(s, segments, 0.5);
    // Joint index i gets 1 from rank i (i < 3) and i-2 from rank i-2 (i >= 2), halved; the second
    // segment (joint indices 2..5) starts at 10: sums 1, 1, 1, 1, 2, 0.
    EXPECT_TRUE(torch::equal(segments[0], torch::tensor({0.5f, 0.5f}))) << segments[0];
    EXPECT_TRUE(torch::equal(segments[1], torch::tensor({10.5f, 10.5f, 11.0f, 10.0f})))
        << segments[1];
    EXPECT_EQ(comm.step().payload_bytes, 16 + 8);
    EXPECT_EQ(comm.step().bus_bytes, allgather_bus_bytes(n * 16 + 8 * n, n));
    SparseView unsorted{torch::tensor({3, 1}, torch::kLong), torch::ones({2})};
    EXPECT_THROW(scatter_add_segments(unsorted, segments, 1.0), std::invalid_argument);
    SparseView outside{torch::tensor({6}, torch::kLong), torch::ones({1})};
    EXPECT_THROW(scatter_add_segments(outside, segments, 1.0), std::invalid_argument);
  });
}

}  // namespace
}  // namespace cedar
