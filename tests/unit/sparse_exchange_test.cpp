// The sparse (index, value) encoding shared by DGC, top-k and random-k (algorithms/
// sparse_exchange.h): exact payload sizes and round trips, the keep count, and the sparse
// allgather with the scatter into the segments of a joint index space, with its metered bytes.
#include "algorithms/exchange/sparse_exchange.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "comm/bus_bytes.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"

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
