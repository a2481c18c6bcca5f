// Claims compared across revisions of their file (reports/claim_revisions.h): old revisions read
// leniently, claims paired by run and metric (and text), and exactly the changed fields named.
#include "reports/claim_revisions.h"

#include <gtest/gtest.h>

namespace cedar {
namespace {

const char* const kOld = R"(
suite: s
claims:
  - text: "DGC keeps the accuracy"
    run: dgc
    metric: accuracy_gap
    at_least: -1
    seed_tolerance: 2
  - text: "QSGD sends fewer bytes"
    run: qsgd
    metric: compression
    at_least: 4
)";

const char* const kNew = R"(
suite: s
claims:
  - text: "QSGD sends a quarter of the bytes"
    kind: accounting
    run: qsgd
    metric: payload_compression
    at_least: 4
  - text: "DGC keeps the accuracy"
    kind: finding
    run: dgc
    metric: accuracy_gap
    at_least: -0.5
    at_most: 1
  - text: "LAG skips uploads"
    kind: finding
    run: lag
    metric: payload_compression
    at_least: 1.5
    window: {from_epoch: 2}
)";

TEST(ClaimRevisions, OldRevisionsReadLeniently) {
  const auto old = parse_claim_revisions(kOld);
  ASSERT_EQ(old.size(), 2u);
  EXPECT_FALSE(old[0].kind_stated);
  EXPECT_EQ(old[0].claim.kind, "finding");  // evaluated as a finding
  EXPECT_EQ(old[0].seed_tolerance, "2");
  EXPECT_EQ(old[1].claim.metric, "payload_compression");  // the older name, read as today
  EXPECT_TRUE(parse_claim_revisions("not: [yaml").empty());
  EXPECT_TRUE(parse_claim_revisions("suite: s\n").empty());
}

TEST(ClaimRevisions, PairsByRunAndMetricThenText) {
  const auto old = parse_claim_revisions(kOld), now = parse_claim_revisions(kNew);
  const auto pairs = pair_claims(old, now);
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].before, 1);   // qsgd: same run and metric, new text
  EXPECT_EQ(pairs[1].before, 0);   // dgc: same run, metric and text
  EXPECT_EQ(pairs[2].before, -1);  // lag: introduced
  EXPECT_EQ(pairs[2].after, 2);
  // Removed claims come last, with no `after`.
  const auto back = pair_claims(now, old);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].before, 2);
  EXPECT_EQ(back[2].after, -1);
}

TEST(ClaimRevisions, NamesExactlyTheChangedFields) {
  const auto old = parse_claim_revisions(kOld), now = parse_claim_revisions(kNew);
  const auto dgc = claim_changes(old[0], now[1]);
  ASSERT_EQ(dgc.size(), 4u);
  EXPECT_EQ(dgc[0].field, "at_least");
  EXPECT_EQ(dgc[0].before, "-1");
  EXPECT_EQ(dgc[0].after, "-0.5");
  EXPECT_EQ(dgc[1].field, "at_most");
  EXPECT_EQ(dgc[1].before, "–");
  EXPECT_EQ(dgc[1].after, "1");
  EXPECT_EQ(dgc[2].field, "kind");
  EXPECT_EQ(dgc[2].before, "–");
  EXPECT_EQ(dgc[3].field, "seed_tolerance");
  EXPECT_TRUE(claim_changes(now[2], now[2]).empty());
  auto moved = now[2];
  moved.claim.window.from_epoch = 3;
  const auto window = claim_changes(now[2], moved);
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].before, "epochs ≥ 2 (counted from 0)");
  EXPECT_EQ(claim_bounds(now[1].claim), "≥ -0.5, ≤ 1");
}

}  // namespace
}  // namespace cedar
