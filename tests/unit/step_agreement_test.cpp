// The ranks' agreement on a step (runner/train/step_agreement.h): every field of a report comes
// back in its own place, the statistics are summed over ranks, the stop signal and the
// non-finite update are those of the lowest rank that has one, and every rank gets the same; and
// the fp16 skip that any rank's overflow decides for all.
#include "runner/train/step_agreement.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <csignal>
#include <functional>
#include <limits>
#include <vector>

#include "comm/communicator.h"
#include "comm/inprocess_communicator.h"

namespace cedar {
namespace {

// Runs one agreement on n ranks; report(r) is rank r's report. Returns each rank's agreement.
std::vector<StepAgreement> agree(int n, const std::function<StepReport(int)>& report) {
  std::vector<StepAgreement> out(static_cast<size_t>(n));
  run_ranks(n, [&](Communicator& comm) {
    out[static_cast<size_t>(comm.rank())] = agree_on_step(comm, report(comm.rank()));
  });
  return out;
}

void expect_same(const StepAgreement& a, const StepAgreement& b) {
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_EQ(a.correct, b.correct);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.payload_bytes, b.payload_bytes);
  EXPECT_EQ(a.stop_signal, b.stop_signal);
  EXPECT_EQ(a.nonfinite_rank, b.nonfinite_rank);
  EXPECT_EQ(a.nonfinite_param, b.nonfinite_param);
}

TEST(StepAgreement, EveryFieldComesBackInItsOwnPlaceOnOneRank) {
  StepReport r;
  r.loss_sum = 147.25;
  r.correct = 61;
  r.count = 64;
  r.payload_bytes = (int64_t{1} << 40) + 12345;  // beyond 32 bits, exact in a double
  r.stop_signal = SIGTERM;
  r.nonfinite_param = 42;
  LocalCommunicator local;
  const StepAgreement a = agree_on_step(local, r);
  EXPECT_EQ(a.loss_sum, 147.25);
  EXPECT_EQ(a.correct, 61);
  EXPECT_EQ(a.count, 64);
  EXPECT_EQ(a.payload_bytes, (int64_t{1} << 40) + 12345);
  EXPECT_EQ(a.stop_signal, SIGTERM);
  EXPECT_EQ(a.nonfinite_rank, 0);
  EXPECT_EQ(a.nonfinite_param, 42);
}

TEST(StepAgreement, AQuietStepNeitherStopsNorDiverges) {
  for (int n : {1, 3}) {
    for (const StepAgreement& a : agree(n, [](int) { return StepReport{2.0, 1, 4, 100, 0, 0}; })) {
      EXPECT_EQ(a.stop_signal, 0) << n << " rank(s)";
      EXPECT_EQ(a.nonfinite_rank, -1) << n << " rank(s)";
      EXPECT_EQ(a.nonfinite_param, 0) << n << " rank(s)";
    }
  }
}

TEST(StepAgreement, StatisticsAreSummedOverRanks) {
  const int n = 4;
  const auto agreed = agree(n, [](int r) {
    StepReport rep;
    rep.loss_sum = 0.5 + r;                            // 0.5 + 1.5 + 2.5 + 3.5
    rep.correct = 10 * r;                              // 0 + 10 + 20 + 30
    rep.count = 16 + r;                                // 16 + 17 + 18 + 19
    rep.payload_bytes = (int64_t{1} << 33) * (r + 1);  // 2^33 * (1 + 2 + 3 + 4)
    return rep;
  });
  for (const StepAgreement& a : agreed) {
    EXPECT_EQ(a.loss_sum, 8.0);
    EXPECT_EQ(a.correct, 60);
    EXPECT_EQ(a.count, 70);
    EXPECT_EQ(a.payload_bytes, (int64_t{1} << 33) * 10);
    expect_same(a, agreed[0]);
  }
}

TEST(StepAgreement, TheLowestRankWithAStopSignalDecides) {
  // Rank 1 got SIGTERM, rank 3 SIGINT: every rank stops with rank 1's signal.
  auto agreed = agree(4, [](int r) {
    StepReport rep;
    rep.stop_signal = r == 1 ? SIGTERM : r == 3 ? SIGINT : 0;
    return rep;
  });
  for (const StepAgreement& a : agreed) EXPECT_EQ(a.stop_signal, SIGTERM);
  // One signal on the last rank is enough for all of them.
  agreed = agree(4, [](int r) {
    StepReport rep;
    rep.stop_signal = r == 3 ? SIGINT : 0;
    return rep;
  });
  for (const StepAgreement& a : agreed) EXPECT_EQ(a.stop_signal, SIGINT);
}

TEST(StepAgreement, TheLowestRankWithANonFiniteUpdateIsNamed) {
  // Ranks 2 and 3 both saw NaN/Inf, in different parameters: rank 2's is reported everywhere.
  const auto agreed = agree(4, [](int r) {
    StepReport rep;
    rep.nonfinite_param = r == 2 ? 5 : r == 3 ? 1 : 0;
    return rep;
  });
  for (const StepAgreement& a : agreed) {
    EXPECT_EQ(a.nonfinite_rank, 2);
    EXPECT_EQ(a.nonfinite_param, 5);
  }
}

TEST(StepAgreement, ANonFiniteLossOnOneRankMakesTheSumNonFinite) {
  const auto agreed = agree(3, [](int r) {
    StepReport rep;
    rep.loss_sum = r == 1 ? std::numeric_limits<double>::quiet_NaN() : 1.0;
    rep.count = 1;
    return rep;
  });
  for (const StepAgreement& a : agreed) {
    EXPECT_FALSE(std::isfinite(a.loss_sum));
    EXPECT_EQ(a.count, 3);
  }
}

TEST(StepAgreement, SuccessiveStepsAgreeOnTheirOwnReports) {
  // Two agreements in a row on the same ranks: the second sees only the second reports.
  std::vector<StepAgreement> first(3), second(3);
  run_ranks(3, [&](Communicator& comm) {
    const auto r = static_cast<size_t>(comm.rank());
    StepReport a;
    a.count = 1;
    a.stop_signal = comm.rank() == 0 ? SIGINT : 0;
    first[r] = agree_on_step(comm, a);
    StepReport b;
    b.count = 2;
    second[r] = agree_on_step(comm, b);
  });
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(first[r].count, 3);
    EXPECT_EQ(first[r].stop_signal, SIGINT);
    EXPECT_EQ(second[r].count, 6);
    EXPECT_EQ(second[r].stop_signal, 0);
  }
}

// fp16 loss scaling: one rank's overflow makes every rank skip, whichever rank it is; none skips
// when no rank overflowed.
TEST(StepAgreement, AnyRanksOverflowSkipsTheStepOnEveryRank) {
  for (int overflowing : {-1, 0, 2}) {
    std::vector<int> skip(3, -1);
    run_ranks(3, [&](Communicator& comm) {
      skip[static_cast<size_t>(comm.rank())] =
          any_rank_overflowed(comm, comm.rank() == overflowing) ? 1 : 0;
    });
    for (int r = 0; r < 3; ++r)
      EXPECT_EQ(skip[static_cast<size_t>(r)], overflowing >= 0 ? 1 : 0)
          << "rank " << r << ", overflow on rank " << overflowing;
  }
}

}  // namespace
}  // namespace cedar
