// The deadline of every operation (comm/collective_watchdog.h, comm/watched_communicator.h): an
// operation that never completes is reported once, naming itself, its bytes, its peer, the step
// and the rank; an operation that starts after the link died is caught the same way; operations
// that complete are never reported. A short limit makes the watchdog fire; each test waits on the
// watchdog's own report (which also lets the stuck operation go) and asserts only on what it says,
// never on how long anything took.
#include "comm/collective_watchdog.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "comm/watched_communicator.h"

namespace cedar {
namespace {

constexpr double kShort = 0.05;  // fires on an operation that is stuck
constexpr double kNever = 3600;  // never fires in a test

// A one-way latch: what the watchdog reported, once.
class Report {
 public:
  void set(const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      what_ = what;
    }
    cv_.notify_all();
  }
  std::string wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return what_.has_value(); });
    return *what_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::string> what_;
};

// One rank behind a link that can go down: while it is down, every operation waits until it is
// restored (as TCP waits on a dead link); while it is up, collectives are the identity.
class Link final : public Communicator {
 public:
  void go_down() { set_up(false); }
  void restore() { set_up(true); }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "link"; }
  void allreduce_sum(at::Tensor&) override { wait_up(); }
  at::Tensor allgather(const at::Tensor& t) override { return wait_up(), t.reshape({-1}).clone(); }
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override { return {allgather(t)}; }
  void broadcast(at::Tensor&, int) override { wait_up(); }
  void barrier() override { wait_up(); }
  void send(const at::Tensor&, int, int) override { wait_up(); }
  void recv(at::Tensor&, int, int) override { wait_up(); }
  int recv_any(at::Tensor&, int) override { return wait_up(), 0; }
  void sendrecv(const at::Tensor& out, int, at::Tensor& in, int, int) override {
    wait_up();
    in.copy_(out);
  }
  std::unique_ptr<Communicator> split(int, int, const std::string&) override {
    throw CommError("link: no split");
  }

 private:
  void set_up(bool up) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      up_ = up;
    }
    cv_.notify_all();
  }
  void wait_up() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return up_; });
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool up_ = true;
};

TEST(CollectiveWatchdog, DescribesTheOperationItsBytesPeerStepAndRank) {
  EXPECT_EQ(CollectiveWatchdog::describe(1, "allreduce", 246824, -1, 12, 5),
            "rank 1: allreduce of 246,824 bytes did not complete within 5 s "
            "(network.collective_timeout_s), in step 12");
  EXPECT_EQ(CollectiveWatchdog::describe(0, "send", 1024, 3, 0, 0.5),
            "rank 0: send of 1,024 bytes to rank 3 did not complete within 0.5 s "
            "(network.collective_timeout_s), in step 0");
  EXPECT_EQ(CollectiveWatchdog::describe(2, "recv", 64, 1, -1, 300),
            "rank 2: recv of 64 bytes from rank 1 did not complete within 300 s "
            "(network.collective_timeout_s), before the first step");
  EXPECT_EQ(CollectiveWatchdog::describe(2, "recv_any", 8, -1, 4, 300),
            "rank 2: recv_any of 8 bytes from any rank did not complete within 300 s "
            "(network.collective_timeout_s), in step 4");
}

// Two in-process ranks: rank 1 never joins the allreduce until rank 0's watchdog has reported it.
TEST(CollectiveWatchdog, AnAllreduceAPeerNeverJoinsIsReportedByTheRankWaiting) {
  Report report;
  Report released;  // rank 1 waits for it before joining
  run_ranks(2, [&](Communicator& inner) {
    const int r = inner.rank();
    CollectiveWatchdog dog(r == 0 ? kShort : kNever, r, [&](const std::string& what) {
      report.set(what);
      released.set("go");
    });
    WatchedCommunicator watched(inner, dog);
    MeteredCommunicator comm(watched);
    dog.set_step(7);
    auto t = torch::ones({10});
    if (r == 1) released.wait();
    comm.allreduce_sum(t);
    EXPECT_TRUE(torch::equal(t, torch::full({10}, 2.0f)));  // it completes once rank 1 joins
    EXPECT_EQ(dog.expired(), r == 0);
  });
  EXPECT_EQ(report.wait(),
            "rank 0: allreduce of 40 bytes did not complete within 0.05 s "
            "(network.collective_timeout_s), in step 7");
}

TEST(CollectiveWatchdog, AReceiveWhoseSenderIsCutOffNamesThePeer) {
  Report report;
  Report released;
  run_ranks(2, [&](Communicator& inner) {
    const int r = inner.rank();
    CollectiveWatchdog dog(r == 0 ? kShort : kNever, r, [&](const std::string& what) {
      report.set(what);
      released.set("go");
    });
    WatchedCommunicator watched(inner, dog);
    auto t = torch::zeros({16});
    if (r == 0) {
      watched.recv(t, 1, 5);
      EXPECT_TRUE(torch::equal(t, torch::ones({16})));
    } else {
      released.wait();
      watched.send(torch::ones({16}), 0, 5);
    }
  });
  EXPECT_EQ(report.wait(),
            "rank 0: recv of 64 bytes from rank 1 did not complete within 0.05 s "
            "(network.collective_timeout_s), before the first step");
}

// The link dies between steps, with no operation in flight: the next operation, whatever it is,
// gets its own deadline and is the one reported. (No operation completes through this watchdog
// first: with its 0.05 s limit, one that a loaded machine delayed past it would be reported
// instead, and the watchdog, stopped by that report, would leave the broadcast below stuck.
// That completed operations are never reported is OperationsThatCompleteAreNotReported's, with
// a limit no delay reaches.)
TEST(CollectiveWatchdog, ALinkThatDiesBetweenStepsFailsTheNextOperation) {
  Link link;
  Report report;
  CollectiveWatchdog dog(kShort, 1, [&](const std::string& what) {
    report.set(what);
    link.restore();  // lets the stuck operation return, so that the test ends
  });
  WatchedCommunicator watched(link, dog);
  MeteredCommunicator comm(watched);
  dog.set_step(4);
  link.go_down();
  dog.set_step(5);
  auto flag = torch::zeros({1}, torch::kInt64);
  comm.broadcast(flag, 0);  // step 5's first operation: stuck until the report
  EXPECT_EQ(report.wait(),
            "rank 1: broadcast of 8 bytes did not complete within 0.05 s "
            "(network.collective_timeout_s), in step 5");
  EXPECT_TRUE(dog.expired());
  EXPECT_EQ(comm.totals().at("broadcast").calls, 1);  // metering above is unchanged
}

// Operations that complete are never reported, and the watchdog stops at once when destroyed
// (with a deadline an hour away, a destructor that waited for it would hang the test).
TEST(CollectiveWatchdog, OperationsThatCompleteAreNotReported) {
  Link link;
  bool reported = false;
  {
    CollectiveWatchdog dog(kNever, 0, [&](const std::string&) { reported = true; });
    WatchedCommunicator watched(link, dog);
    auto t = torch::ones({4});
    for (int step = 0; step < 100; ++step) {
      dog.set_step(step);
      watched.allreduce_sum(t);
      watched.barrier();
    }
    EXPECT_FALSE(dog.expired());
  }
  EXPECT_FALSE(reported);
}

}  // namespace
}  // namespace cedar
