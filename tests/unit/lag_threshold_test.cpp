// LAG's threshold (algorithms/lag_threshold.h), which the all-reduce LAG-WK and the parameter
// server's workers share: (ξ/D) Σ of the D newest moves, each over the square of its own rate,
// against values worked out by hand here.
#include "algorithms/lag_threshold.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace cedar {
namespace {

TEST(LagThreshold, TheNewestDMovesEachOverItsOwnRateSquared) {
  LagThreshold t(/*xi=*/2.0, /*history=*/3);
  EXPECT_EQ(t.value(), 0.0);  // no move yet: the missing ones count 0
  t.moved(4.0, 0.5);          // 4 / 0.25 = 16
  EXPECT_DOUBLE_EQ(t.value(), 2.0 / 3 * 16);
  t.moved(9.0, 1.0);   // 9
  t.moved(25.0, 0.5);  // 100 (a decayed rate does not shrink the old moves)
  t.moved(50.0, 0.0);  // a move at rate 0 counts 0; the oldest (16) drops out
  EXPECT_DOUBLE_EQ(t.value(), 2.0 / 3 * (9 + 100 + 0));
  EXPECT_EQ(t.moves(), (std::vector<double>{0, 100, 9}));  // newest first
}

TEST(LagThreshold, MovesRoundTripAndTooManyAreRefused) {
  LagThreshold a(1.0, 4), b(1.0, 4);
  for (double m : {1.0, 2.0, 3.0}) a.moved(m, 1.0);
  b.set_moves(a.moves());
  EXPECT_EQ(b.value(), a.value());
  a.moved(5.0, 1.0);
  b.moved(5.0, 1.0);
  EXPECT_EQ(b.moves(), a.moves());
  EXPECT_THROW(b.set_moves({1, 2, 3, 4, 5}), std::runtime_error);
}

}  // namespace
}  // namespace cedar
