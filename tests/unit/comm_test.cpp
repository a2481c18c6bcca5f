// Collectives of the in-process backend and the metering layer's exact byte counts; the local
// (one-process) backend's gathers are copies whose large storage is reused only once released.
#include <gtest/gtest.h>
#include <torch/types.h>

#include "comm/bus_bytes.h"
#include "comm/communicator.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "comm/network_model.h"
#include "tests/unit/point_to_point_checks.h"

namespace cedar {
namespace {

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, ResultsAndExactByteCounts) {
  const int n = GetParam();
  run_ranks(n, [n](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    // allreduce: sum of (rank+1) * [1..10]
    auto t = torch::arange(1, 11, torch::kFloat) * (r + 1);
    comm.allreduce_sum(t);
    float scale = n * (n + 1) / 2.0f;
    EXPECT_TRUE(torch::equal(t, torch::arange(1, 11, torch::kFloat) * scale));
    // allgather: rank i contributes [i, i, i]
    auto g = comm.allgather(torch::full({3}, float(r)));
    ASSERT_EQ(g.numel(), 3 * n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(g[3 * i + 1].item<float>(), float(i));
    // allgatherv: rank i contributes i elements (rank 0 none)
    auto parts = comm.allgatherv(torch::full({r}, int64_t(r), torch::kLong));
    ASSERT_EQ(static_cast<int>(parts.size()), n);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(parts[i].numel(), i);
      if (i) {
        EXPECT_EQ(parts[i].sum().item<int64_t>(), int64_t(i) * i);
      }
    }
    // broadcast from the last rank
    auto b = torch::full({5}, double(r), torch::kDouble);
    comm.broadcast(b, n - 1);
    EXPECT_TRUE(torch::equal(b, torch::full({5}, double(n - 1), torch::kDouble)));

    // Exact counts: the formulas of bus_bytes.h, computed by hand here.
    const auto& tot = comm.totals();
    if (n == 1) {
      EXPECT_EQ(tot.at("allreduce").payload_bytes, 0);
      EXPECT_EQ(tot.at("allreduce").bus_bytes, 0);
      return;
    }
    EXPECT_EQ(tot.at("allreduce").payload_bytes, 40);
    EXPECT_EQ(tot.at("allreduce").bus_bytes, (2 * (n - 1) * 40 + n / 2) / n);
    EXPECT_EQ(tot.at("allgather").payload_bytes, 12);
    EXPECT_EQ(tot.at("allgather").bus_bytes, ((n - 1) * 12 * n + n / 2) / n);
    EXPECT_EQ(tot.at("allgatherv").payload_bytes, 8 * r + 8);
    int64_t gathered = 8 * (n * (n - 1) / 2) + 8 * n;
    EXPECT_EQ(tot.at("allgatherv").bus_bytes, ((n - 1) * gathered + n / 2) / n);
    EXPECT_EQ(tot.at("broadcast").payload_bytes, r == n - 1 ? 40 : 0);
    EXPECT_EQ(tot.at("broadcast").bus_bytes, 40);
    EXPECT_EQ(comm.step().calls, 4);
    // alpha terms: allreduce 2(n-1), allgather n-1, allgatherv 2(n-1), broadcast ceil(log2 n)
    int64_t log2n = n <= 1 ? 0 : n <= 2 ? 1 : 2;
    EXPECT_EQ(comm.step().latency_steps, 2 * (n - 1) + (n - 1) + 2 * (n - 1) + log2n);
    EXPECT_EQ(comm.step().payload_bytes, 40 + 12 + 8 * r + 8 + (r == n - 1 ? 40 : 0));
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 4));

TEST(LocalCommunicator, GathersAreCopiesAndAHeldResultIsNeverReused) {
  LocalCommunicator comm;
  const int64_t n = 1 << 19;  // 2 MiB of floats: outputs in the reused storage
  const at::Tensor a = torch::arange(n, torch::kFloat);
  at::Tensor first = comm.allgather(a.view({512, -1}));
  EXPECT_TRUE(torch::equal(first, a));
  EXPECT_NE(first.data_ptr(), a.data_ptr());
  const at::Tensor view = first.narrow(0, 1, 10);  // keeps the first storage alive
  first = at::Tensor();
  at::Tensor second = comm.allgather(a * 2);
  EXPECT_TRUE(torch::equal(view, torch::arange(1, 11, torch::kFloat)));
  EXPECT_TRUE(torch::equal(second, a * 2));
  const void* storage = second.data_ptr();
  second = at::Tensor();  // released: the next gather takes its storage
  const auto parts = comm.allgatherv(torch::arange(n / 2, torch::kLong));  // the same 2 MiB
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].data_ptr(), storage);
  EXPECT_TRUE(torch::equal(parts[0], torch::arange(n / 2, torch::kLong)));
  EXPECT_TRUE(torch::equal(comm.allgather(torch::ones({3})), torch::ones({3})));  // small: a copy
}

class PointToPoint : public ::testing::TestWithParam<int> {};

TEST_P(PointToPoint, MessagesArriveAndAreMeteredAsSent) {
  run_ranks(GetParam(), [](Communicator& comm) { testing::check_point_to_point(comm); });
}

TEST_P(PointToPoint, PostedSendsNeverWaitForTheirReceivers) {
  run_ranks(GetParam(), [](Communicator& comm) { testing::check_posted_sends(comm); });
}

TEST_P(PointToPoint, ReceiveFromAnyRankNamesTheSender) {
  run_ranks(GetParam(), [](Communicator& comm) { testing::check_receive_from_any(comm); });
}

TEST_P(PointToPoint, SplitsFormTheirGroupsAndCountTheirLevels) {
  run_ranks(GetParam(), [](Communicator& comm) { testing::check_split(comm); });
}

INSTANTIATE_TEST_SUITE_P(Ranks, PointToPoint, ::testing::Values(2, 3, 4));

TEST(PointToPoint, EachLevelIsEmulatedWithItsOwnProfile) {
  // A slow "inter" level (1 ms per message) and an instant world: the inter allreduce of 2
  // ranks lasts at least its 2 latency steps.
  const NetworkProfile slow{"slow", 1e-3, 0};
  run_ranks(2, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    comm.emulate_level("inter", &slow);
    std::unique_ptr<Communicator> inter = comm.split(0, comm.rank(), "inter");
    auto t = torch::ones({4});
    inter->allreduce_sum(t);
    EXPECT_GE(comm.totals().at("inter/allreduce").seconds, 2e-3);
    EXPECT_EQ(comm.step_levels().at("inter").latency_steps, 2);
  });
}

TEST(LocalCommunicator, PointToPointHasNoPeersButItself) {
  LocalCommunicator local;
  Communicator& comm = local;
  auto out = torch::arange(6, torch::kFloat);
  auto in = torch::empty({2, 3});
  comm.sendrecv(out, 0, in, 0);
  EXPECT_TRUE(torch::equal(in.reshape({-1}), out));
  EXPECT_THROW(comm.send(out, 1), CommError);
  EXPECT_EQ(comm.split(0, 0, "intra")->size(), 1);
}

TEST(NetworkModel, AlphaBetaCostOfARingAllreduce) {
  const NetworkProfile& gbe = find_network_profile("1gbe");
  // 4 ranks, 1 MB: 2(P-1) = 6 latency steps and 2(P-1)/P * 1e6 = 1.5e6 bus bytes.
  double t = gbe.seconds(allreduce_latency_steps(4), allreduce_bus_bytes(1000000, 4));
  EXPECT_NEAR(t, 6 * 50e-6 + 1.5e6 * 8e-9, 1e-12);
  EXPECT_LT(find_network_profile("100gbe").seconds(6, 1500000), t / 50);
  EXPECT_THROW(find_network_profile("token-ring"), std::invalid_argument);
}

TEST(BusBytes, NcclTestsFactors) {
  EXPECT_EQ(allreduce_bus_bytes(1000, 4), 1500);  // 2*3/4
  EXPECT_EQ(allgather_bus_bytes(1000, 4), 750);   // 3/4
  EXPECT_EQ(broadcast_bus_bytes(1000, 4), 1000);
  EXPECT_EQ(allreduce_bus_bytes(1000, 1), 0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(algbw_gbps(2000000000, 2.0), 1.0);
}

}  // namespace
}  // namespace cedar
