// The step timeline of train.trace: the Chrome trace it writes, and the summary's hidden share of
// the exchange computed on hand-written traces with known answers.
#include "runner/train/timeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "runner/train/exchange_overlap.h"
#include "runner/train/timeline_summary.h"

namespace cedar {
namespace {

std::string temp_file(const std::string& name, const std::string& text = "") {
  const auto path = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove(path);
  if (!text.empty()) std::ofstream(path) << text;
  return path.string();
}

// Three steps of rank 0 (times in µs):
//   step 3: backward [100, 200]; exchanges [150, 250] (50 of 100 hidden) and [260, 300] (none
//           of 40): 50 / 140
//   step 4: backward [1000, 1100]; exchange [1000, 1050], wholly inside: 1
//   step 5: backward [2000, 2100]; exchange [2200, 2300], after it: 0
// The median of {5/14, 1, 0} is 5/14. A metadata and an instant event are not phases.
const char* kHandWritten = R"({"traceEvents": [
  {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "rank 0"}},
  {"name": "mark", "ph": "i", "ts": 120, "pid": 0, "tid": 0},
  {"name": "forward", "cat": "forward", "ph": "X", "ts": 40, "dur": 60, "pid": 0, "tid": 0, "args": {"step": 3}},
  {"name": "backward", "cat": "backward", "ph": "X", "ts": 100, "dur": 100, "pid": 0, "tid": 0, "args": {"step": 3}},
  {"name": "exchange bucket 0", "cat": "exchange", "ph": "X", "ts": 150, "dur": 100, "pid": 0, "tid": 1, "args": {"step": 3, "bucket": 0}},
  {"name": "exchange bucket 1", "cat": "exchange", "ph": "X", "ts": 260, "dur": 40, "pid": 0, "tid": 1, "args": {"step": 3, "bucket": 1}},
  {"name": "backward", "cat": "backward", "ph": "X", "ts": 1000, "dur": 100, "pid": 0, "tid": 0, "args": {"step": 4}},
  {"name": "exchange bucket 0", "cat": "exchange", "ph": "X", "ts": 1000, "dur": 50, "pid": 0, "tid": 1, "args": {"step": 4}},
  {"name": "backward", "cat": "backward", "ph": "X", "ts": 2000, "dur": 100, "pid": 0, "tid": 0, "args": {"step": 5}},
  {"name": "exchange bucket 0", "cat": "exchange", "ph": "X", "ts": 2200, "dur": 100, "pid": 0, "tid": 0, "args": {"step": 5}},
  {"name": "optimizer", "cat": "optimizer", "ph": "X", "ts": 2300, "dur": 7, "pid": 0, "tid": 0, "args": {"step": 5}}
]})";

// Backward over [10, 20]: an exchange inside it is hidden whole, one across its end in part, one
// after it not at all, one that began before backward (not possible in a run) only from 10 on.
TEST(ExchangeOverlap, TheExchangesPartsInsideBackward) {
  ExchangeOverlap x;
  EXPECT_EQ(x.hidden_share(), 0);  // nothing exchanged
  x.add(12, 14, 10, 20);           // 2 of 2 hidden
  x.add(18, 23, 10, 20);           // 2 of 5
  x.add(23, 26, 10, 20);           // 0 of 3
  EXPECT_DOUBLE_EQ(x.exchange, 10);
  EXPECT_DOUBLE_EQ(x.hidden, 4);
  EXPECT_DOUBLE_EQ(x.hidden_share(), 0.4);
  x.add(8, 11, 10, 20);  // 1 of 3
  EXPECT_DOUBLE_EQ(x.exchange, 13);
  EXPECT_DOUBLE_EQ(x.hidden, 5);
  ExchangeOverlap none;
  none.add(5, 9, 10, 20);  // all before backward
  EXPECT_DOUBLE_EQ(none.hidden, 0);
  EXPECT_DOUBLE_EQ(none.exchange, 4);
}

TEST(TimelineSummary, HiddenShareOfAHandWrittenTrace) {
  const auto events = read_timeline(temp_file("hand.json", kHandWritten));
  ASSERT_EQ(events.size(), 9u);  // the complete events only
  const TimelineSummary s = summarize_timeline(events);
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(s.steps[0].step, 3);
  EXPECT_DOUBLE_EQ(s.steps[0].exchange_us, 140);
  EXPECT_DOUBLE_EQ(s.steps[0].hidden_us, 50);
  EXPECT_DOUBLE_EQ(s.steps[1].hidden_share(), 1);
  EXPECT_DOUBLE_EQ(s.steps[2].hidden_share(), 0);
  EXPECT_DOUBLE_EQ(s.median_hidden_share, 50.0 / 140.0);
  EXPECT_EQ(s.ranks, 1);
  // Phases in a step's order, each summed over the steps.
  ASSERT_EQ(s.phase_us.size(), 4u);
  EXPECT_EQ(s.phase_us[0], (std::pair<std::string, double>{"forward", 60}));
  EXPECT_EQ(s.phase_us[1], (std::pair<std::string, double>{"backward", 300}));
  EXPECT_EQ(s.phase_us[2], (std::pair<std::string, double>{"exchange", 290}));
  EXPECT_EQ(s.phase_us[3], (std::pair<std::string, double>{"optimizer", 7}));
  const std::string table = format_timeline_summary(s);
  EXPECT_NE(table.find("median 0.357"), std::string::npos) << table;
  EXPECT_NE(table.find("backward            0.300        0.100"), std::string::npos) << table;
}

TEST(TimelineSummary, EvenStepCountsAndRanksAreMedianedPerRankAndStep) {
  // Rank 0 step 1 hides 1/4 of its exchange, rank 1 step 1 3/4: median 1/2. A step without
  // exchange time is left out of the median.
  std::vector<TimelineEvent> ev;
  auto add = [&](int rank, int64_t step, const char* cat, double t0, double t1) {
    TimelineEvent e;
    e.category = cat;
    e.rank = rank;
    e.step = step;
    e.start_us = t0;
    e.duration_us = t1 - t0;
    ev.push_back(e);
  };
  add(0, 1, kTraceBackward, 0, 10);
  add(0, 1, kTraceExchange, 9, 13);
  add(1, 1, kTraceBackward, 0, 10);
  add(1, 1, kTraceExchange, 7, 11);
  add(1, 2, kTraceStep, 20, 30);
  const TimelineSummary s = summarize_timeline(ev);
  EXPECT_EQ(s.ranks, 2);
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(s.median_hidden_share, 0.5);
  EXPECT_LT(summarize_timeline({}).median_hidden_share, 0);
}

TEST(TimelineSummary, SlicedExchangesAreListedInTheOrderTheyStarted) {
  // train.schedule: priority: rank 0's step 7 exchanged slices 2 (priority 3) at 50, 0 (priority
  // 0) at 10 and 1 (priority 0) at 30, after 4 rounds of negotiation; events out of order in the
  // file. The slices and priorities round-trip through the JSON.
  const std::string path = temp_file("sliced.json");
  Timeline tl(path, StepRange{7, 7}, 0);
  tl.add(7, kTraceBackward, "backward", 0, 40);
  for (const auto& [slice, priority, start] :
       std::vector<std::tuple<int64_t, int64_t, double>>{{2, 3, 50}, {0, 0, 10}, {1, 0, 30}}) {
    TimelineEvent& e = tl.add(7, kTraceExchange, "exchange", start, start + 5, 1);
    e.slice = slice;
    e.priority = priority;
  }
  for (int k = 0; k < 4; ++k) tl.add(7, kTraceNegotiate, "negotiate", 8.0 * k, 8.0 * k + 1, 1);
  tl.step_done(7);
  const auto events = read_timeline(path);
  ASSERT_EQ(events.size(), 8u);
  EXPECT_EQ(events[1].slice, 2);
  EXPECT_EQ(events[1].priority, 3);
  EXPECT_EQ(events[0].slice, -1);  // no slice on the backward event
  const TimelineSummary s = summarize_timeline(events);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].rounds, 4);
  EXPECT_EQ(s.steps[0].slices, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}, {2, 3}}));
  const std::string table = format_timeline_summary(s);
  EXPECT_NE(table.find("rank 0 step 7: 3 slices in 4 rounds, on the wire: 0(p0) 1(p0) 2(p3)"),
            std::string::npos)
      << table;
}

TEST(TimelineSummary, FilesThatAreNoTraceAreNamed) {
  const std::string junk = temp_file("junk.json", "{\"events\": []}");
  try {
    read_timeline(junk);
    FAIL() << "read a file without traceEvents";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(junk + ": not a Chrome trace"), std::string::npos)
        << e.what();
  }
  const std::string cut = temp_file("cut.json", "{\"traceEvents\": [{\"ph\": \"X\", ");
  EXPECT_THROW(read_timeline(cut), std::runtime_error);
  EXPECT_THROW(read_timeline(temp_file("absent.json")), std::runtime_error);
}

TEST(Timeline, PathsPerRank) {
  EXPECT_EQ(timeline_path("/tmp/t.json", 0, 1), "/tmp/t.json");
  EXPECT_EQ(timeline_path("/tmp/t.json", 1, 2), "/tmp/t.rank1.json");
  EXPECT_EQ(timeline_path("out/trace", 3, 4), "out/trace.rank3");
}

TEST(Timeline, WritesAChromeTraceOnceItsLastStepIsDone) {
  const std::string path = temp_file("written.json");
  Timeline tl(path, StepRange{2, 3}, /*rank=*/1);
  EXPECT_FALSE(tl.records(1));
  EXPECT_TRUE(tl.records(2));
  EXPECT_FALSE(tl.records(4));
  tl.add(2, kTraceBackward, "backward", 1000.5, 1500);
  TimelineEvent& e = tl.add(2, kTraceExchange, "exchange bucket 0", 1200, 1100, 1);
  e.bucket = 0;
  e.elements = 61706;
  tl.step_done(2);
  EXPECT_FALSE(std::filesystem::exists(path));
  tl.step_done(3);
  ASSERT_TRUE(std::filesystem::exists(path));
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  const auto& list = doc.at("traceEvents");
  ASSERT_EQ(list.size(), 5u);  // 2 events, the process's name, 2 threads' names
  EXPECT_EQ(list[0].at("name"), "backward");
  EXPECT_EQ(list[0].at("cat"), "backward");
  EXPECT_EQ(list[0].at("ph"), "X");
  EXPECT_DOUBLE_EQ(list[0].at("ts").get<double>(), 1000.5);
  EXPECT_DOUBLE_EQ(list[0].at("dur").get<double>(), 499.5);
  EXPECT_EQ(list[0].at("pid"), 1);
  EXPECT_EQ(list[0].at("tid"), 0);
  EXPECT_EQ(list[0].at("args").at("step"), 2);
  EXPECT_FALSE(list[0].at("args").contains("bucket"));
  EXPECT_EQ(list[1].at("tid"), 1);
  EXPECT_EQ(list[1].at("dur"), 0);  // an end before the start is an empty event
  EXPECT_EQ(list[1].at("args").at("bucket"), 0);
  EXPECT_EQ(list[1].at("args").at("elements"), 61706);
  EXPECT_EQ(list[2].at("ph"), "M");
  EXPECT_EQ(list[2].at("args").at("name"), "rank 1");
  // What it wrote reads back as what was recorded.
  const auto back = read_timeline(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].name, "exchange bucket 0");
  EXPECT_EQ(back[1].rank, 1);
  EXPECT_EQ(back[1].thread, 1);
  EXPECT_EQ(back[1].elements, 61706);
}

}  // namespace
}  // namespace cedar
