// MPI backend on real ranks: collective results equal the formulas, metered bytes are exact.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runner/comm/bus_bytes.h"
#include "runner/comm/metered_communicator.h"
#include "runner/comm/mpi_communicator.h"

namespace cedar {
namespace {

TEST(MpiComm, AllreduceAllgatherBroadcastAndBytes) {
  MpiCommunicator mpi;
  MeteredCommunicator comm(mpi);
  const int n = comm.size(), r = comm.rank();
  ASSERT_GE(n, 2) << "run under mpirun -np 2 or more";
  for (auto dtype : {torch::kFloat, torch::kDouble, torch::kLong}) {
    auto t = torch::arange(0, 1000, dtype) * (r + 1);
    comm.allreduce_sum(t);
    EXPECT_TRUE(torch::equal(t, torch::arange(0, 1000, dtype) * (n * (n + 1) / 2)));
  }
  auto g = comm.allgather(torch::full({7}, r, torch::kInt));
  for (int i = 0; i < n; ++i) EXPECT_EQ(g[7 * i + 6].item<int>(), i);
  auto parts = comm.allgatherv(torch::full({2 * r}, float(r)));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(parts[i].numel(), 2 * i);
    if (i) {
      EXPECT_FLOAT_EQ(parts[i][0].item<float>(), float(i));
    }
  }
  auto b = torch::full({16}, uint8_t(r), torch::kByte);
  comm.broadcast(b, 1);
  EXPECT_EQ(b.sum().item<int64_t>(), 16);

  const auto& tot = comm.totals();
  // float 4000 + double 8000 + long 8000 bytes allreduced.
  EXPECT_EQ(tot.at("allreduce").payload_bytes, 20000);
  EXPECT_EQ(tot.at("allreduce").bus_bytes, allreduce_bus_bytes(4000, n) +
                                               allreduce_bus_bytes(8000, n) * 2);
  EXPECT_EQ(tot.at("allreduce").calls, 3);
  EXPECT_EQ(tot.at("allgather").payload_bytes, 28);
  EXPECT_EQ(tot.at("allgather").bus_bytes, allgather_bus_bytes(28 * n, n));
  EXPECT_EQ(tot.at("allgatherv").payload_bytes, 8 * r + 8);
  EXPECT_EQ(tot.at("allgatherv").bus_bytes, allgather_bus_bytes(8 * (n * (n - 1) / 2) + 8 * n, n));
  EXPECT_EQ(tot.at("broadcast").payload_bytes, r == 1 ? 16 : 0);
}

TEST(MpiComm, GpuTensorsAreRejectedWithAClearMessage) {
  MpiCommunicator mpi;
  auto h = torch::zeros({2}, torch::kHalf);
  try {
    mpi.allreduce_sum(h);
    FAIL();
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("backend mpi does not support allreduce of Half"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cedar
