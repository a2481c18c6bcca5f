// MPI backend on real ranks: collective results equal the formulas, metered bytes are exact, and
// with idle waiting a rank whose peers are late sleeps instead of spinning. The staging path of
// CUDA tensors (copy into host buffers, the operation, copy out) runs here on CPU tensors
// (stage_every_tensor): the same results, and buffers reused from call to call.
#include <gtest/gtest.h>
#include <time.h>
#include <torch/torch.h>

#include <cfloat>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "comm/bus_bytes.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "tests/unit/allreduce_checks.h"
#include "tests/unit/point_to_point_checks.h"

namespace cedar {
namespace {

// How a rank waits for its peers, and whether tensors travel through the host buffers.
enum class Mode { kBlockingWait, kIdleWait, kStaged };

class MpiCollectives : public ::testing::TestWithParam<Mode> {};

TEST_P(MpiCollectives, AllreduceAllgatherBroadcastAndBytes) {
  MpiCommunicator mpi;
  mpi.set_idle_wait(GetParam() == Mode::kIdleWait);
  mpi.stage_every_tensor(GetParam() == Mode::kStaged);
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
  EXPECT_EQ(tot.at("allreduce").bus_bytes,
            allreduce_bus_bytes(4000, n) + allreduce_bus_bytes(8000, n) * 2);
  EXPECT_EQ(tot.at("allreduce").calls, 3);
  EXPECT_EQ(tot.at("allgather").payload_bytes, 28);
  EXPECT_EQ(tot.at("allgather").bus_bytes, allgather_bus_bytes(28 * n, n));
  EXPECT_EQ(tot.at("allgatherv").payload_bytes, 8 * r + 8);
  EXPECT_EQ(tot.at("allgatherv").bus_bytes, allgather_bus_bytes(8 * (n * (n - 1) / 2) + 8 * n, n));
  EXPECT_EQ(tot.at("broadcast").payload_bytes, r == 1 ? 16 : 0);
}

INSTANTIATE_TEST_SUITE_P(MpiComm, MpiCollectives,
                         ::testing::Values(Mode::kBlockingWait, Mode::kIdleWait, Mode::kStaged),
                         [](const ::testing::TestParamInfo<Mode>& info) -> std::string {
                           switch (info.param) {
                             case Mode::kBlockingWait: return "BlockingWait";
                             case Mode::kIdleWait: return "IdleWait";
                             case Mode::kStaged: return "Staged";
                           }
                           return "";
                         });

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Rank 0 runs `wait` (an operation that needs the other ranks) while every other rank reaches its
// part, `late`, 0.4 s after a barrier; returns rank 0's seconds in `wait`, wall-clock and CPU.
template <class Wait, class Late>
std::pair<double, double> timed_wait(MpiCommunicator& mpi, Wait wait, Late late) {
  mpi.barrier();
  if (mpi.rank() != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    late();
    return {0, 0};
  }
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_seconds();
  wait();
  const double cpu = thread_cpu_seconds() - cpu0;
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count(), cpu};
}

TEST(MpiComm, IdleWaitSleepsWhileItsPeersAreLate) {
  // Rank 0 waits at least 0.4 s for the others in a collective, in a receive from rank 1 and in a
  // receive from any rank; with idle waiting it spends a small part of each wait on the CPU
  // (spinning in MPI would spend all of it).
  MpiCommunicator mpi;
  mpi.set_idle_wait(true);
  at::Tensor t = torch::ones({1000});
  const auto check = [&](const char* what, std::pair<double, double> seconds) {
    if (mpi.rank() != 0) return;
    EXPECT_GE(seconds.first, 0.3) << what;
    EXPECT_LT(seconds.second, 0.25 * seconds.first)
        << what << ": rank 0 waited " << seconds.first << " s and used " << seconds.second
        << " s of CPU";
  };
  check("allreduce", timed_wait(
                         mpi, [&] { mpi.allreduce_sum(t); }, [&] { mpi.allreduce_sum(t); }));
  EXPECT_EQ(t[0].item<float>(), float(mpi.size()));
  at::Tensor message = torch::zeros({10});
  check("recv", timed_wait(
                    mpi, [&] { mpi.recv(message, 1, 7); },
                    [&] {
                      if (mpi.rank() == 1) mpi.send(torch::full({10}, 3.0f), 0, 7);
                    }));
  EXPECT_EQ(message.sum().item<float>(), mpi.rank() == 0 ? 30.0f : 0.0f);
  int sender = -1;
  check("recv_any", timed_wait(
                        mpi, [&] { sender = mpi.recv_any(message, 8); },
                        [&] {
                          if (mpi.rank() == 1) mpi.send(torch::full({10}, 4.0f), 0, 8);
                        }));
  if (mpi.rank() == 0) {
    EXPECT_EQ(sender, 1);
  }
}

TEST(MpiComm, PointToPointMessagesArriveAndAreMeteredAsSent) {
  MpiCommunicator mpi;
  testing::check_point_to_point(mpi);
}

TEST(MpiComm, PostedSendsNeverWaitForTheirReceivers) {
  MpiCommunicator mpi;
  testing::check_posted_sends(mpi);
}

TEST(MpiComm, PostedSendsWaitIdle) {
  MpiCommunicator mpi;
  mpi.set_idle_wait(true);
  testing::check_posted_sends(mpi);
}

TEST(MpiComm, ReceiveFromAnyRankNamesTheSender) {
  MpiCommunicator mpi;
  testing::check_receive_from_any(mpi);
}

// Every other rank has sent rank 0 four messages before rank 0 receives any: a receive from any
// rank serves the waiting senders in turn (1, 2, ..., 1, 2, ...), whatever order MPI would match
// MPI_ANY_SOURCE in, so a parameter server cannot starve a worker.
TEST(MpiComm, ReceiveFromAnyRankServesTheWaitingSendersInTurn) {
  MpiCommunicator mpi;
  const int n = mpi.size();
  constexpr int kEach = 4;
  if (mpi.rank() != 0) {
    for (int m = 0; m < kEach; ++m) mpi.send(torch::tensor({mpi.rank(), m}, torch::kInt), 0, 9);
    mpi.barrier();  // small messages: sent (buffered) before rank 0 starts receiving
    return;
  }
  mpi.barrier();
  std::vector<int> order;
  for (int m = 0; m < kEach * (n - 1); ++m) {
    auto got = torch::empty({2}, torch::kInt);
    order.push_back(mpi.recv_any(got, 9));
  }
  for (size_t i = 0; i < order.size(); ++i)
    EXPECT_EQ(order[i], 1 + static_cast<int>(i % static_cast<size_t>(n - 1)))
        << "receive " << i << " of " << order.size();
}

TEST(MpiComm, SplitsFormTheirGroupsAndCountTheirLevels) {
  MpiCommunicator mpi;
  testing::check_split(mpi);
}

TEST(MpiComm, StagedPointToPointAndSplitsWorkAsUnstaged) {
  MpiCommunicator mpi;
  mpi.stage_every_tensor(true);
  testing::check_point_to_point(mpi);
  testing::check_receive_from_any(mpi);
  testing::check_split(mpi);
}

// network.allreduce's schemes over MPI's point-to-point messages: each in its own summation order
// with its formula's bytes (allreduce_checks.h), and within fp32 rounding of the library's sum.
TEST(MpiComm, AllreduceSchemesAgreeWithTheLibrary) {
  MpiCommunicator mpi;
  const int n = mpi.size(), r = mpi.rank();
  ASSERT_EQ(n % 2, 0) << "run under mpirun -np 2 or 4";
  for (auto scheme : {AllreduceScheme::ring, AllreduceScheme::halving_doubling,
                      AllreduceScheme::tree, AllreduceScheme::two_level})
    for (int64_t count : {int64_t{3}, int64_t{1001}}) {
      const at::Tensor ours = testing::check_allreduce_scheme(mpi, scheme, count, 2);
      at::Tensor library = testing::scheme_input(r, count);
      mpi.allreduce_sum(library);
      at::Tensor magnitude = torch::zeros({count}, torch::kDouble);
      for (int i = 0; i < n; ++i)
        magnitude += testing::scheme_input(i, count).to(torch::kDouble).abs();
      const at::Tensor gap = (ours.to(torch::kDouble) - library.to(torch::kDouble)).abs();
      EXPECT_TRUE((gap <= magnitude * (n * FLT_EPSILON)).all().item<bool>())
          << allreduce_scheme_name(scheme) << ", " << count << " elements: gap "
          << gap.max().item<double>();
    }
}

TEST(MpiComm, StagedResultsLandInTheCallersTensorAndTheBuffersAreReused) {
  MpiCommunicator world;
  // On its own duplicate of the world, whose tensors are said to live on the CPU.
  std::unique_ptr<MpiCommunicator> mpi = world.on_device(at::Device(at::kCPU));
  mpi->stage_every_tensor(true);
  EXPECT_EQ(mpi->device(), at::Device(at::kCPU));
  EXPECT_EQ(mpi->size(), world.size());
  const int n = mpi->size(), r = mpi->rank();
  const int64_t m = 1000;
  for (int round = 0; round < 3; ++round) {
    // Every result goes into the caller's own storage.
    auto t = torch::full({m}, double(r + round));
    const void* storage = t.data_ptr();
    mpi->allreduce_sum(t);
    EXPECT_EQ(t.data_ptr(), storage);
    EXPECT_EQ(t[m - 1].item<double>(), double(n * (n - 1) / 2 + n * round));
    at::Tensor g = mpi->allgather(torch::full({m}, float(r)));
    EXPECT_EQ(g[(n - 1) * m].item<float>(), float(n - 1));
    auto b = torch::full({m}, int64_t(r + 5));
    mpi->broadcast(b, n - 1);
    EXPECT_EQ(b[0].item<int64_t>(), int64_t(n - 1 + 5));
  }
  // Grown to the largest call (the input: m doubles; the output: n * m floats) and kept.
  const int64_t in = mpi->staging().capacity(HostStaging::kInput);
  const int64_t out = mpi->staging().capacity(HostStaging::kOutput);
  EXPECT_EQ(in, m * 8);
  EXPECT_EQ(out, n * m * 4);
  auto small = torch::ones({10});
  mpi->allreduce_sum(small);
  EXPECT_EQ(small[9].item<float>(), float(n));
  EXPECT_EQ(mpi->staging().capacity(HostStaging::kInput), in);
  // The duplicate's messages never meet the world's: the world's receive skips the message sent
  // first, on the duplicate with the same peer and tag (4-byte messages: sent without waiting).
  if (r == 0) {
    mpi->send(torch::full({1}, 7.0f), 1, 9);
    world.send(torch::full({1}, 42.0f), 1, 9);
  } else if (r == 1) {
    auto from_world = torch::zeros({1}), from_duplicate = torch::zeros({1});
    world.recv(from_world, 0, 9);
    mpi->recv(from_duplicate, 0, 9);
    EXPECT_EQ(from_world.item<float>(), 42.0f);
    EXPECT_EQ(from_duplicate.item<float>(), 7.0f);
  }
}

TEST(MpiComm, LargeGatherOutputsAreReusedOnlyOnceDropped) {
  MpiCommunicator comm;
  const int n = comm.size(), r = comm.rank();
  const int64_t m = (int64_t{1} << 20) / 4;  // 1 MiB of floats per rank
  at::Tensor kept = comm.allgather(torch::full({m}, float(r)));
  const void* kept_storage = kept.data_ptr();
  // While `kept` is alive its storage must not be written by the next gathers.
  at::Tensor second = comm.allgather(torch::full({m}, float(r + 10)));
  at::Tensor parts_flat = torch::cat(comm.allgatherv(torch::full({m}, float(r + 20))));
  EXPECT_NE(second.data_ptr(), kept_storage);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(kept[i * m + m - 1].item<float>(), float(i));
    EXPECT_EQ(second[i * m].item<float>(), float(i + 10));
    EXPECT_EQ(parts_flat[i * m + 5].item<float>(), float(i + 20));
  }
  // Once every view of a result is dropped its storage serves the next gather of that size.
  at::Tensor third = comm.allgather(torch::full({m}, float(r + 30)));
  const void* third_storage = third.data_ptr();
  EXPECT_EQ(third[(n - 1) * m].item<float>(), float(n - 1 + 30));
  third = at::Tensor();
  at::Tensor fourth = comm.allgather(torch::full({m}, float(r + 40)));
  EXPECT_EQ(fourth.data_ptr(), third_storage);
  EXPECT_EQ(fourth[(n - 1) * m + 3].item<float>(), float(n - 1 + 40));
  EXPECT_EQ(kept[m].item<float>(), 1.0f);  // still intact
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
