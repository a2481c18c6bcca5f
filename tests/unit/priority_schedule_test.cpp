// train.schedule: priority: the slices cut from the buckets (slice_plan.h, sliced_buckets.h) and
// the ranks' agreement on their order (priority_schedule.h), on in-process ranks whose readiness
// is scripted round by round, so that every order below is determined and written by hand or by
// a simulation of the rule kept in this file.
#include "runner/train/priority_schedule.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "runner/train/buckets.h"
#include "runner/train/slice_plan.h"
#include "runner/train/sliced_buckets.h"

namespace cedar {
namespace {

// ---------------------------------------------------------------- the slices

TEST(PlanSlices, CutsEachBucketAndOrdersByTheFirstLayerHeld) {
  // Bucket 0 holds layers 3 (5 values) then 2 (12), bucket 1 layers 1 (4) then 0 (3), as
  // make_buckets lays them out (reverse model order). Slices of 6:
  //   bucket 0: [0, 6) layers 3 and 2 -> priority 2; [6, 12) and [12, 17) layer 2 -> 2
  //   bucket 1: [0, 6) layers 1 and 0 -> 0; [6, 7) layer 0 -> 0
  const std::vector<Slice> s = plan_slices({{{5, 3}, {12, 2}}, {{4, 1}, {3, 0}}}, 6);
  struct Want {
    int64_t bucket, offset, numel, priority;
    std::vector<int64_t> pieces;
  };
  const std::vector<Want> want = {{1, 0, 6, 0, {0, 1}},
                                  {1, 6, 1, 0, {1}},
                                  {0, 0, 6, 2, {0, 1}},
                                  {0, 6, 6, 2, {1}},
                                  {0, 12, 5, 2, {1}}};
  ASSERT_EQ(s.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(s[i].bucket, want[i].bucket) << i;
    EXPECT_EQ(s[i].offset, want[i].offset) << i;
    EXPECT_EQ(s[i].numel, want[i].numel) << i;
    EXPECT_EQ(s[i].priority, want[i].priority) << i;
    EXPECT_EQ(s[i].pieces, want[i].pieces) << i;
  }
  EXPECT_THROW(plan_slices({{{5, 0}}}, 0), std::invalid_argument);
}

TEST(PlanSlices, EveryElementOnceWithThePriorityOfItsEarliestLayer) {
  std::mt19937 gen(5);
  for (int trial = 0; trial < 50; ++trial) {
    // Random buckets of random pieces; layers numbered so that later buckets hold earlier layers.
    const int nbuckets = 1 + static_cast<int>(gen() % 4);
    std::vector<std::vector<BucketPiece>> buckets(static_cast<size_t>(nbuckets));
    int64_t layer = 40;
    for (auto& b : buckets)
      for (int p = 0, n = 1 + static_cast<int>(gen() % 5); p < n; ++p)
        b.push_back({static_cast<int64_t>(gen() % 30), layer--});
    const int64_t size = 1 + static_cast<int64_t>(gen() % 25);
    const std::vector<Slice> slices = plan_slices(buckets, size);
    std::map<int64_t, std::vector<int>> seen;  // bucket -> per element, times covered
    for (size_t b = 0; b < buckets.size(); ++b) {
      int64_t n = 0;
      for (const auto& p : buckets[b]) n += p.numel;
      seen[static_cast<int64_t>(b)].assign(static_cast<size_t>(n), 0);
    }
    for (size_t i = 0; i < slices.size(); ++i) {
      const Slice& s = slices[i];
      EXPECT_GE(s.numel, 1);
      EXPECT_LE(s.numel, size);
      // The layer of each element of the slice, looked up element by element.
      int64_t lowest = INT64_MAX;
      for (int64_t e = s.offset; e < s.offset + s.numel; ++e) {
        ++seen[s.bucket][static_cast<size_t>(e)];
        int64_t at = 0;
        for (const auto& p : buckets[static_cast<size_t>(s.bucket)]) {
          if (e >= at && e < at + p.numel) lowest = std::min(lowest, p.layer);
          at += p.numel;
        }
      }
      EXPECT_EQ(s.priority, lowest);
      if (i > 0) {
        const Slice& prev = slices[i - 1];
        EXPECT_TRUE(std::tie(prev.priority, prev.bucket, prev.offset) <
                    std::tie(s.priority, s.bucket, s.offset));
      }
    }
    for (const auto& [b, counts] : seen)
      for (int c : counts) EXPECT_EQ(c, 1) << "bucket " << b;
  }
}

// Four parameters of a two-layer network in model order, in buckets as the trainer makes them.
std::vector<NamedTensor> small_model() {
  return {{"fc1.weight", torch::zeros({4, 3})},
          {"fc1.bias", torch::zeros({4})},
          {"fc2.weight", torch::zeros({5, 4})},
          {"fc2.bias", torch::zeros({5})}};
}

TEST(SlicedBuckets, SlicesAreViewsReadyOnceEveryParameterTheyHoldIsIn) {
  std::vector<NamedTensor> params = small_model();
  // 100 bytes per bucket: {fc2.bias, fc2.weight} (25 values), {fc1.bias, fc1.weight} (16).
  std::vector<GradBucket> buckets = make_buckets(params, 100);
  ASSERT_EQ(buckets.size(), 2u);
  // (bucket, entry) of each parameter in model order.
  const std::vector<std::pair<size_t, size_t>> entry_of = {{1, 1}, {1, 0}, {0, 1}, {0, 0}};
  SlicedBuckets sliced(buckets, entry_of, 7);
  // Bucket 1 (fc1.bias 0-3, fc1.weight 4-15): [0,7) bias+weight, [7,14), [14,16) weight -> p0.
  // Bucket 0 (fc2.bias 0-4, fc2.weight 5-24): [0,7) bias+weight, then weight -> p2.
  ASSERT_EQ(sliced.size(), 7);
  const std::vector<std::pair<int64_t, int64_t>> where = {{1, 0}, {1, 7},  {1, 14}, {0, 0},
                                                          {0, 7}, {0, 14}, {0, 21}};
  for (int64_t i = 0; i < sliced.size(); ++i) {
    EXPECT_EQ(sliced.slice(i).bucket, where[static_cast<size_t>(i)].first);
    EXPECT_EQ(sliced.slice(i).offset, where[static_cast<size_t>(i)].second);
    EXPECT_EQ(sliced.slice(i).priority, i < 3 ? 0 : 2);
  }
  // A slice's bucket is a view of the trainer's: what the exchange writes lands there.
  sliced.bucket(1).flat.fill_(3);
  EXPECT_EQ(buckets[1].flat.slice(0, 7, 14).sum().item<float>(), 21);
  EXPECT_EQ(buckets[1].flat.sum().item<float>(), 21);
  // Its entries: slice 0 holds all of fc1.bias (its shape) and the first 3 values of fc1.weight.
  const GradBucket& first = sliced.bucket(0);
  ASSERT_EQ(first.entries.size(), 2u);
  EXPECT_EQ(first.entries[0].name, "fc1.bias");
  EXPECT_EQ(first.entries[0].grad.sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(first.entries[1].name, "fc1.weight");
  EXPECT_EQ(first.entries[1].grad.numel(), 3);
  EXPECT_EQ(first.entries[1].grad.data_ptr<float>(), buckets[1].flat.data_ptr<float>() + 4);

  // Gradients arriving: fc2.bias, fc2.weight, fc1.weight, then fc1.bias.
  const auto ready = [&] {
    std::vector<int64_t> out;
    const ReadySnapshot s = sliced.snapshot();
    for (size_t i = 0; i < s.ready.size(); ++i)
      if (s.ready[i]) out.push_back(static_cast<int64_t>(i));
    return out;
  };
  EXPECT_EQ(ready(), (std::vector<int64_t>{}));
  sliced.gradient_in(3);
  EXPECT_EQ(ready(), (std::vector<int64_t>{}));  // slice 3 also holds part of fc2.weight
  sliced.gradient_in(2);
  EXPECT_EQ(ready(), (std::vector<int64_t>{3, 4, 5, 6}));
  sliced.gradient_in(0);
  EXPECT_EQ(ready(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_FALSE(sliced.complete());
  sliced.gradient_in(1);
  EXPECT_TRUE(sliced.complete());
  sliced.reset();
  EXPECT_EQ(sliced.ready_count(), 0);
}

// ---------------------------------------------------------------- the agreement

// Rank r's ready set in round k is script[r][k] (the last one from there on); each wait the
// protocol asks for is recorded. The real source blocks until the set grows; a script that would
// block forever fails the test instead.
struct ScriptedRank {
  std::vector<std::set<int64_t>> script;
  int64_t slices = 0;
  int64_t calls = 0;
  std::vector<std::optional<int64_t>> waits;
  std::optional<ReadySnapshot> next(std::optional<int64_t> grown_past) {
    const auto& set = script[std::min(static_cast<size_t>(calls++), script.size() - 1)];
    waits.push_back(grown_past);
    if (grown_past && static_cast<int64_t>(set.size()) <= *grown_past &&
        static_cast<int64_t>(set.size()) < slices)
      ADD_FAILURE() << "round " << calls - 1 << " would wait forever on " << set.size();
    ReadySnapshot s;
    s.ready.assign(static_cast<size_t>(slices), false);
    for (int64_t i : set) s.ready[static_cast<size_t>(i)] = true;
    return s;
  }
};

struct RankOutcome {
  std::vector<int64_t> order;  // the slices this rank exchanged, in order
  std::vector<ScheduleRound> rounds;
  std::vector<std::optional<int64_t>> waits;
  CommCounters allgather, allreduce;
};

// Runs the protocol on script.size() in-process ranks, each through a metering communicator.
// Exchanging slice i is an allreduce of the value i + 1: it sums to ranks x (i + 1) only where
// every rank exchanged the same slice in the same collective.
std::vector<RankOutcome> run_scripted(const std::vector<std::vector<std::set<int64_t>>>& scripts,
                                      int64_t slices) {
  const int n = static_cast<int>(scripts.size());
  std::vector<RankOutcome> out(static_cast<size_t>(n));
  run_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    RankOutcome& me = out[static_cast<size_t>(inner.rank())];
    ScriptedRank rank;
    rank.script = scripts[static_cast<size_t>(inner.rank())];
    rank.slices = slices;
    me.rounds = exchange_in_priority_order(
        slices, comm, [&](std::optional<int64_t> past) { return rank.next(past); },
        [&](int64_t i) {
          at::Tensor v = torch::full({1}, static_cast<float>(i + 1));
          comm.allreduce_sum(v);
          EXPECT_EQ(v.item<float>(), static_cast<float>(n * (i + 1))) << "ranks disagree";
          me.order.push_back(i);
        });
    me.waits = rank.waits;
    me.allgather =
        comm.totals().count("allgather") ? comm.totals().at("allgather") : CommCounters{};
    me.allreduce =
        comm.totals().count("allreduce") ? comm.totals().at("allreduce") : CommCounters{};
  });
  return out;
}

std::vector<int64_t> chosen(const std::vector<ScheduleRound>& rounds) {
  std::vector<int64_t> c;
  for (const ScheduleRound& r : rounds) c.push_back(r.chosen);
  return c;
}

TEST(PrioritySchedule, AHigherPrioritySliceJumpsAheadOfReadyLowerOnes) {
  // Slices 0 (first layer) .. 3. Backward makes 3 and 2 ready first; 0 becomes ready on both
  // ranks after the first slice: it goes before 3, ready all along; then 1, then 3.
  const std::set<int64_t> all = {0, 1, 2, 3};
  const auto out = run_scripted({{{3, 2}, {3, 2, 0}, all}, {{3, 2}, {3, 2, 0}, all}}, 4);
  for (const RankOutcome& r : out) {
    EXPECT_EQ(r.order, (std::vector<int64_t>{2, 0, 1, 3}));
    EXPECT_EQ(chosen(r.rounds), (std::vector<int64_t>{2, 0, 1, 3}));  // no round without one
    // Round 0 waited for a first ready slice, the others started at once.
    EXPECT_EQ(r.waits, (std::vector<std::optional<int64_t>>{0, {}, {}, {}}));
  }
}

TEST(PrioritySchedule, SlicesReadyOnOneRankOnlyWaitForTheOthers) {
  // Round 0: rank 0 holds {3}, rank 1 {2}: none ready everywhere, so both wait until their own
  // sets grow past 1 slice. Round 1: {2, 3} on both -> 2; then 0 and 1 (priority) before 3.
  const std::set<int64_t> all = {0, 1, 2, 3};
  const auto out = run_scripted({{{3}, {3, 2}, all}, {{2}, {2, 3}, all}}, 4);
  for (const RankOutcome& r : out) {
    EXPECT_EQ(chosen(r.rounds), (std::vector<int64_t>{-1, 2, 0, 1, 3}));
    EXPECT_EQ(r.order, (std::vector<int64_t>{2, 0, 1, 3}));
    EXPECT_EQ(r.waits, (std::vector<std::optional<int64_t>>{0, 1, {}, {}, {}}));
    EXPECT_EQ(r.rounds[0].ready_here, 1);
    EXPECT_EQ(r.rounds[0].ready_everywhere, 0);
    EXPECT_EQ(r.rounds[1].ready_everywhere, 2);
  }
}

// The rule restated: in round k every rank holds scripts[r][k]; the first slice held by all and
// not yet exchanged goes next, none when there is none.
std::vector<int64_t> simulate(const std::vector<std::vector<std::set<int64_t>>>& scripts,
                              int64_t slices) {
  std::vector<int64_t> rounds;
  std::set<int64_t> done;
  for (size_t k = 0; static_cast<int64_t>(done.size()) < slices; ++k) {
    int64_t pick = -1;
    for (int64_t i = 0; i < slices && pick < 0; ++i) {
      bool everywhere = !done.count(i);
      for (const auto& s : scripts)
        everywhere = everywhere && s[std::min(k, s.size() - 1)].count(i);
      if (everywhere) pick = i;
    }
    rounds.push_back(pick);
    if (pick >= 0) done.insert(pick);
  }
  return rounds;
}

TEST(PrioritySchedule, RandomReadinessOnThreeRanksFollowsTheRuleAndCountsItsBytes) {
  // 11 slices: a bitmap of 2 bytes per rank and round.
  const int64_t slices = 11;
  std::mt19937 gen(11);
  for (int trial = 0; trial < 20; ++trial) {
    // Each rank's ready set grows by 1 to 3 random slices per round until it holds them all.
    std::vector<std::vector<std::set<int64_t>>> scripts(3);
    for (auto& script : scripts) {
      std::vector<int64_t> order(static_cast<size_t>(slices));
      for (int64_t i = 0; i < slices; ++i) order[static_cast<size_t>(i)] = i;
      std::shuffle(order.begin(), order.end(), gen);
      std::set<int64_t> have;
      for (size_t at = 0; at < order.size();) {
        for (size_t add = 1 + gen() % 3; add > 0 && at < order.size(); --add)
          have.insert(order[at++]);
        script.push_back(have);
      }
    }
    const std::vector<int64_t> want = simulate(scripts, slices);
    std::vector<int64_t> want_order;
    for (int64_t c : want)
      if (c >= 0) want_order.push_back(c);
    for (const RankOutcome& r : run_scripted(scripts, slices)) {
      EXPECT_EQ(chosen(r.rounds), want) << "trial " << trial;
      EXPECT_EQ(r.order, want_order);
      // Bytes: one allgather of ceil(11 / 8) = 2 bytes per round, one allreduce per slice.
      const auto rounds = static_cast<int64_t>(want.size());
      EXPECT_EQ(r.allgather.calls, rounds);
      EXPECT_EQ(r.allgather.payload_bytes, 2 * rounds);
      EXPECT_EQ(r.allreduce.calls, slices);
    }
  }
}

TEST(PrioritySchedule, AStoppedStepEndsBeforeItsNextRound) {
  run_ranks(2, [&](Communicator& comm) {
    int calls = 0;
    std::vector<int64_t> order;
    const auto rounds = exchange_in_priority_order(
        3, comm,
        [&](std::optional<int64_t>) -> std::optional<ReadySnapshot> {
          if (calls++ == 1) return std::nullopt;
          return ReadySnapshot{{true, true, true}, 0};
        },
        [&](int64_t i) { order.push_back(i); });
    EXPECT_EQ(rounds.size(), 1u);
    EXPECT_EQ(order, (std::vector<int64_t>{0}));
  });
}

}  // namespace
}  // namespace cedar
