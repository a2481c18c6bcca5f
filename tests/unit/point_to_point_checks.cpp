#include "tests/unit/point_to_point_checks.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include "comm/metered_communicator.h"

namespace cedar::testing {

void check_point_to_point(Communicator& backend) {
  MeteredCommunicator comm(backend);
  const int n = comm.size(), r = comm.rank();
  ASSERT_GE(n, 2);
  const int right = (r + 1) % n, left = (r + n - 1) % n;

  // Ring shift to the right: rank r receives its left neighbour's values.
  auto out = torch::arange(0, 100, torch::kFloat) + 1000 * r;
  auto in = torch::empty({100}, torch::kFloat);
  comm.sendrecv(out, right, in, left, 3);
  EXPECT_TRUE(torch::equal(in, torch::arange(0, 100, torch::kFloat) + 1000 * left));
  // And to the left, a different type and shape.
  auto out2 = torch::full({4, 5}, int64_t(r), torch::kLong);
  auto in2 = torch::empty({4, 5}, torch::kLong);
  comm.sendrecv(out2, left, in2, right, 4);
  EXPECT_TRUE(torch::equal(in2, torch::full({4, 5}, int64_t(right), torch::kLong)));

  // Blocking pairs: even ranks send first, odd ranks receive first; two tags in one direction
  // arrive in their own receives.
  if (r < n - n % 2) {
    const int peer = r % 2 == 0 ? r + 1 : r - 1;
    auto a = torch::full({3}, double(r), torch::kDouble);
    auto b = torch::full({7}, uint8_t(r + 1), torch::kByte);
    auto got_a = torch::empty({3}, torch::kDouble);
    auto got_b = torch::empty({7}, torch::kByte);
    if (r % 2 == 0) {
      comm.send(a, peer, 1);
      comm.send(b, peer, 2);
      comm.recv(got_b, peer, 2);
      comm.recv(got_a, peer, 1);
    } else {
      comm.recv(got_a, peer, 1);
      comm.recv(got_b, peer, 2);
      comm.send(b, peer, 2);
      comm.send(a, peer, 1);
    }
    EXPECT_TRUE(torch::equal(got_a, torch::full({3}, double(peer), torch::kDouble)));
    EXPECT_TRUE(torch::equal(got_b, torch::full({7}, uint8_t(peer + 1), torch::kByte)));
  }

  // The counts: a sendrecv of 100 floats, then of 20 int64; sends of 3 doubles and 7 bytes.
  const auto& tot = comm.totals();
  EXPECT_EQ(tot.at("sendrecv").calls, 2);
  EXPECT_EQ(tot.at("sendrecv").payload_bytes, 100 * 4 + 20 * 8);
  EXPECT_EQ(tot.at("sendrecv").bus_bytes, 100 * 4 + 20 * 8);
  EXPECT_EQ(tot.at("sendrecv").latency_steps, 2);
  if (r < n - n % 2) {
    EXPECT_EQ(tot.at("send").calls, 2);
    EXPECT_EQ(tot.at("send").payload_bytes, 3 * 8 + 7);
    EXPECT_EQ(tot.at("send").bus_bytes, 3 * 8 + 7);
    EXPECT_EQ(tot.at("send").latency_steps, 2);
    EXPECT_EQ(tot.at("recv").calls, 2);
    EXPECT_EQ(tot.at("recv").payload_bytes, 0);
    EXPECT_EQ(tot.at("recv").bus_bytes, 0);
    EXPECT_EQ(tot.at("recv").latency_steps, 0);
  }
  EXPECT_EQ(comm.step().payload_bytes, 100 * 4 + 20 * 8 + (r < n - n % 2 ? 3 * 8 + 7 : 0));

  // A receive of the wrong size names what was expected and what came.
  if (r < 2) {
    auto small = torch::zeros({5}, torch::kFloat);
    auto room = torch::empty({6}, torch::kFloat);
    if (r == 0) {
      comm.send(small, 1, 9);
    } else {
      try {
        comm.recv(room, 0, 9);
        ADD_FAILURE() << "a receive of 6 floats accepted a message of 5";
      } catch (const CommError& e) {
        EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
      }
    }
  }
  // A peer outside the communicator is an error before anything is sent.
  EXPECT_THROW(comm.send(out, n, 0), CommError);
  comm.barrier();
}

void check_posted_sends(Communicator& backend) {
  MeteredCommunicator comm(backend);
  const int n = comm.size(), r = comm.rank();
  ASSERT_GE(n, 2);
  constexpr int64_t kLarge = int64_t{1} << 20;  // floats: 4 MiB, far beyond any eager limit
  const int next = (r + 1) % n, previous = (r + n - 1) % n;
  comm.post(torch::arange(kLarge, torch::kFloat).add_(float(r)), next, 11);
  comm.post(torch::tensor({r, 42}, torch::kInt), next, 11);
  at::Tensor large = torch::empty({kLarge}, torch::kFloat);
  comm.recv(large, previous, 11);
  at::Tensor small = torch::empty({2}, torch::kInt);
  comm.recv(small, previous, 11);
  comm.wait_posted();
  EXPECT_TRUE(large.equal(torch::arange(kLarge, torch::kFloat).add_(float(previous))))
      << "the large message from rank " << previous;
  EXPECT_EQ(small[0].item<int>(), previous);
  EXPECT_EQ(small[1].item<int>(), 42) << "the second message arrives after the first";
  const CommCounters& sent = comm.totals().at("send");
  EXPECT_EQ(sent.calls, 2);
  EXPECT_EQ(sent.payload_bytes, 4 * kLarge + 8);
  EXPECT_EQ(sent.bus_bytes, 4 * kLarge + 8);
  EXPECT_EQ(sent.latency_steps, 2);
}

void check_receive_from_any(Communicator& backend) {
  MeteredCommunicator comm(backend);
  const int n = comm.size(), r = comm.rank();
  ASSERT_GE(n, 2);
  if (r == 0) {
    std::vector<int> seen(n, 0);
    for (int m = 0; m < 2 * (n - 1); ++m) {
      auto got = torch::empty({2}, torch::kInt);
      const int sender = comm.recv_any(got, 5);
      ASSERT_GE(sender, 1);
      ASSERT_LT(sender, n);
      EXPECT_EQ(got[0].item<int>(), sender);
      EXPECT_EQ(got[1].item<int>(), seen[sender]) << "messages of rank " << sender << " reordered";
      ++seen[sender];
    }
    for (int s = 1; s < n; ++s) EXPECT_EQ(seen[s], 2) << "rank " << s;
    EXPECT_EQ(comm.totals().at("recv_any").calls, 2 * (n - 1));
    EXPECT_EQ(comm.totals().at("recv_any").payload_bytes, 0);
    // A message of the wrong size is an error naming what was expected.
    auto room = torch::empty({3}, torch::kInt);
    EXPECT_THROW(comm.recv_any(room, 6), CommError);
    // recv_any_up_to takes shorter messages, an empty one included, in order, and says how
    // many elements came; a longer one is an error.
    auto up_to = torch::full({2}, -1, torch::kInt);
    int64_t received = -1;
    EXPECT_EQ(comm.recv_any_up_to(up_to, 7, received), 1);
    EXPECT_EQ(received, 0) << "the empty message";
    EXPECT_EQ(comm.recv_any_up_to(up_to, 7, received), 1);
    EXPECT_EQ(received, 1);
    EXPECT_EQ(up_to[0].item<int>(), 9);
    EXPECT_EQ(up_to[1].item<int>(), -1) << "beyond the message: untouched";
    EXPECT_THROW(comm.recv_any_up_to(up_to, 7, received), CommError);
    EXPECT_EQ(comm.totals().at("recv_any").calls, 2 * (n - 1) + 2) << "refused ones not counted";
  } else {
    comm.send(torch::tensor({r, 0}, torch::kInt), 0, 5);
    comm.send(torch::tensor({r, 1}, torch::kInt), 0, 5);
    if (r == 1) {
      comm.send(torch::tensor({7, 7}, torch::kInt), 0, 6);
      comm.send(torch::empty({0}, torch::kInt), 0, 7);
      comm.send(torch::tensor({9}, torch::kInt), 0, 7);
      comm.send(torch::tensor({1, 2, 3}, torch::kInt), 0, 7);
    }
    // An empty message is one message of no bytes.
    EXPECT_EQ(comm.totals().at("send").payload_bytes, r == 1 ? 24 + 0 + 4 + 12 : 16);
    EXPECT_EQ(comm.totals().at("send").calls, r == 1 ? 6 : 2);
  }
  comm.barrier();
}

void check_split(Communicator& backend) {
  MeteredCommunicator comm(backend);
  const int n = comm.size(), r = comm.rank();
  ASSERT_GE(n, 2);
  // Even and odd ranks, each half ranked in reverse order of the world rank.
  std::unique_ptr<Communicator> half = comm.split(r % 2, -r, "parity");
  const int half_size = r % 2 == 0 ? (n + 1) / 2 : n / 2;
  ASSERT_EQ(half->size(), half_size);
  EXPECT_EQ(half->rank(), half_size - 1 - r / 2);
  auto t = torch::full({6}, float(r));
  half->allreduce_sum(t);
  float expected = 0;
  for (int i = r % 2; i < n; i += 2) expected += float(i);
  EXPECT_TRUE(torch::equal(t, torch::full({6}, expected)));

  // Blocks of two consecutive ranks ("intra"); their leaders (even ranks) form "inter".
  std::unique_ptr<Communicator> intra = comm.split(r / 2, r, "intra");
  std::unique_ptr<Communicator> inter = comm.split(r % 2 == 0 ? 0 : 1, r, "inter");
  auto block = torch::full({10}, double(r), torch::kDouble);
  intra->allreduce_sum(block);
  const double block_sum = (r / 2 * 2 + 1 < n) ? double(4 * (r / 2) + 1) : double(r);
  EXPECT_TRUE(torch::equal(block, torch::full({10}, block_sum, torch::kDouble)));
  if (intra->size() == 2) {
    auto got = torch::empty({2}, torch::kInt);
    intra->sendrecv(torch::full({2}, r, torch::kInt), 1 - intra->rank(), got, 1 - intra->rank());
    EXPECT_EQ(got[0].item<int>(), r % 2 == 0 ? r + 1 : r - 1);
  }

  // Each level counted in its own name, and in the parent's step counters per level.
  const auto& tot = comm.totals();
  EXPECT_EQ(tot.at("parity/allreduce").payload_bytes, half_size > 1 ? 24 : 0);
  EXPECT_EQ(tot.at("intra/allreduce").payload_bytes, intra->size() > 1 ? 80 : 0);
  EXPECT_EQ(tot.at("intra/allreduce").bus_bytes, intra->size() > 1 ? 80 : 0);  // 2(2-1)/2 * 80
  if (intra->size() == 2) {
    EXPECT_EQ(tot.at("intra/sendrecv").payload_bytes, 8);
  }
  EXPECT_EQ(tot.count("inter/allreduce"), 0u);
  const int64_t intra_bytes = (intra->size() > 1 ? 80 : 0) + (intra->size() == 2 ? 8 : 0);
  EXPECT_EQ(comm.step_levels().at("intra").payload_bytes, intra_bytes);
  // The splits themselves: three exchanges of (color, key), 8 bytes each.
  EXPECT_EQ(tot.at("split").calls, 3);
  EXPECT_EQ(tot.at("split").payload_bytes, 24);
  EXPECT_EQ(comm.step().payload_bytes, 24 + (half_size > 1 ? 24 : 0) + intra_bytes);
  (void)inter;
}

}  // namespace cedar::testing
