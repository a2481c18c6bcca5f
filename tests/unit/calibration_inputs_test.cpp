// What `cedar network calibrate` and `cedar network fit` take in: the calibration options each
// refused with the command-line option at fault named (before any rank times anything), and the
// timings file written by calibrate --timings read back value for value, its bad entries named
// by file, line and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "comm/collective_timings_file.h"
#include "comm/network_calibration.h"
#include "config/params.h"

namespace cedar {
namespace {

CalibrationOptions good() {
  CalibrationOptions o;
  o.sizes = {4096, 65536};
  return o;
}

void expect_refused(const CalibrationOptions& o, const std::string& starts_with) {
  try {
    check_calibration_options(o);
    FAIL() << "accepted; expected " << starts_with;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(starts_with, 0), 0u) << e.what();
  }
}

TEST(CalibrationOptions, EachRefusalNamesItsOption) {
  EXPECT_NO_THROW(check_calibration_options(good()));
  CalibrationOptions o = good();
  o.sizes = {4096};
  expect_refused(o, "--sizes: give two or more");
  o = good();
  o.sizes = {4096, 4098};
  expect_refused(o, "--sizes: 4098 is not a positive multiple of 4");
  o = good();
  o.sizes = {0, 4096};
  expect_refused(o, "--sizes: 0 ");
  o = good();
  o.reps = 0;
  expect_refused(o, "--reps:");
  o = good();
  o.warmup = -1;
  expect_refused(o, "--warmup:");
  o = good();
  o.idle_seconds = 601;
  expect_refused(o, "--idle-ms:");
  o = good();
  o.min_calls = 0;
  expect_refused(o, "--min-calls: must lie");
  o = good();
  o.idle_seconds = 0.1;
  o.min_calls = 2;
  expect_refused(o, "--min-calls: --idle-ms times each call alone");
  o.min_calls = 1;
  EXPECT_NO_THROW(check_calibration_options(o));
  o = good();
  o.ops = {"allreduce", "gossip"};
  expect_refused(o, "--ops: 'gossip' is not one of");
  o.ops = {"allgather", "broadcast"};
  expect_refused(o, "--ops: include allreduce");
  o.ops = {"broadcast", "allreduce"};
  EXPECT_NO_THROW(check_calibration_options(o));
}

// Which ranks time each P: the first P alone, or with every_group each group of P consecutive
// ranks at once (a host's ranks where the hostfile fills a host first); a P that does not divide
// the ranks into groups is refused naming the option.
TEST(CalibrationOptions, EveryGroupTimesEachGroupOfConsecutiveRanks) {
  CalibrationOptions o = good();
  o.world_sizes = {2, 4};
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(calibration_group(o, rank, 2), rank < 2 ? 0 : -1) << rank;
    EXPECT_EQ(calibration_group(o, rank, 4), 0) << rank;
  }
  o.every_group = true;
  const int expected_groups[] = {0, 0, 1, 1};
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(calibration_group(o, rank, 2), expected_groups[rank]) << rank;
    EXPECT_EQ(calibration_group(o, rank, 4), 0) << rank;
  }
  EXPECT_EQ(calibration_world_sizes(o, 4), (std::vector<int>{2, 4}));
  o.world_sizes = {2, 3};
  try {
    calibration_world_sizes(o, 4);
    FAIL() << "P = 3 of 4 ranks accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "--every-group: P = 3 does not divide the 4 ranks running into groups");
  }
  o.every_group = false;
  EXPECT_EQ(calibration_world_sizes(o, 4), (std::vector<int>{2, 3}));
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

TEST(CollectiveTimingsFile, RoundTripsEveryValue) {
  CollectiveTimingsFile f;
  f.measured_on = "virtual cluster: 2 hosts x 1 rank, \"100 Mbit/s\"";
  f.timings = {{"allreduce", 2, 65536, 0.006123456789012345, 20},
               {"allreduce", 4, 33554432, 5.2751, 3},
               {"sendrecv", 2, 4096, 1.0e-5, 1000}};
  const std::string path = temp_path("timings.yaml");
  write_collective_timings(path, f);
  const CollectiveTimingsFile back = load_collective_timings(path);
  EXPECT_EQ(back.measured_on, f.measured_on);
  ASSERT_EQ(back.timings.size(), f.timings.size());
  for (size_t i = 0; i < f.timings.size(); ++i) {
    EXPECT_EQ(back.timings[i].op, f.timings[i].op);
    EXPECT_EQ(back.timings[i].world, f.timings[i].world);
    EXPECT_EQ(back.timings[i].bytes, f.timings[i].bytes);
    EXPECT_EQ(back.timings[i].calls, f.timings[i].calls);
    EXPECT_NEAR(back.timings[i].seconds, f.timings[i].seconds, f.timings[i].seconds * 1e-14);
  }
}

TEST(CollectiveTimingsFile, BadEntriesNameFileLineAndKey) {
  const std::string head = "measured_on: here\ntimings:\n";
  auto expect_error = [&](const std::string& text, const std::string& place,
                          const std::string& needle) {
    const std::string path = write("bad_timings.yaml", text);
    try {
      load_collective_timings(path);
      FAIL() << text;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path + place), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  const std::string ok = "  - {op: allreduce, P: 2, bytes: 4096, calls: 1, seconds: 0.001}\n";
  expect_error(head + "  - {op: alltoall, P: 2, bytes: 4096, seconds: 0.001}\n", ":3:", "op");
  expect_error(head + "  - {op: allreduce, P: 1, bytes: 4096, seconds: 0.001}\n", ":3:", "P");
  expect_error(head + "  - {op: allreduce, P: 2, bytes: 4094, seconds: 0.001}\n",
               ":3:", "multiple of 4");
  expect_error(head + "  - {op: allreduce, P: 2, bytes: 4096, seconds: 0}\n", ":3:", "seconds");
  expect_error(head + "  - {op: allreduce, P: 2, bytes: 4096}\n", ":3:", "'seconds'");
  expect_error(head + ok + "  - {op: allreduce, P: 2, bytes: 4096, seconds: 0.002}\n",
               ":4:", "given twice");
  expect_error(head + "  - {op: allreduce, P: 2, bytes: 4096, seconds: 0.001, gamma: 1}\n",
               ":3:", "gamma");
  expect_error("measured_on: here\n", "", "timings: expected a list");
  expect_error("measured_on: here\nwhen: today\ntimings:\n" + ok, ":2:", "when: unknown key");
  expect_error(head + "  - {op: [\n", ":", "");
  try {
    load_collective_timings(temp_path("no_such_timings.yaml"));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read the timings file"), std::string::npos);
  }
}

}  // namespace
}  // namespace cedar
