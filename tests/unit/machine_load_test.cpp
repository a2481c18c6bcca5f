// The machine's load beside a run: /proc/stat's cpu line, the per-host sums of the ranks' CPU
// time, the provenance entry the store writes and the note the provenance table prints.
#include "runner/train/machine_load.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "platform/cpu_time.h"
#include "reports/provenance_table.h"
#include "results/store.h"

namespace cedar {
namespace {

// Linux's order: user nice system idle iowait irq softirq steal guest guest_nice. At 100 ticks/s:
// busy = 100 + 20 + 30 + 5 + 3 + 2 = 160 ticks = 1.6 s; idle = 800 + 40 = 840 ticks; total 10 s.
TEST(CpuTime, ProcStatLineIsReadAsBusyAndIdleSeconds) {
  CpuTimeSample s;
  ASSERT_TRUE(parse_proc_stat_cpu_line("cpu  100 20 30 800 40 5 3 2 0 0", 100, s));
  EXPECT_TRUE(s.machine_known);
  EXPECT_DOUBLE_EQ(s.machine_busy_seconds, 1.6);
  EXPECT_DOUBLE_EQ(s.machine_total_seconds, 10.0);
  CpuTimeSample untouched;
  EXPECT_FALSE(parse_proc_stat_cpu_line("cpu0 1 2 3 4", 100, untouched));  // one CPU's line
  EXPECT_FALSE(parse_proc_stat_cpu_line("cpu 1 2", 100, untouched));       // truncated
  EXPECT_FALSE(parse_proc_stat_cpu_line("intr 1 2 3 4", 100, untouched));
  EXPECT_FALSE(untouched.machine_known);
}

// This process's CPU time grows with the work it does, and the machine's busy time by at least as
// much: the property machine_load relies on (never a rate).
TEST(CpuTime, ProcessTimeIsPartOfTheMachinesBusyTime) {
  const CpuTimeSample a = sample_cpu_time();
  ASSERT_TRUE(a.machine_known) << "/proc/stat unreadable";
  volatile double x = 0;
  CpuTimeSample b = sample_cpu_time();
  while (b.process_seconds - a.process_seconds < 0.05) {  // at least 50 ms of CPU, however long
    for (int i = 0; i < 1000000; ++i) x = x + 1e-9 * i;
    b = sample_cpu_time();
  }
  EXPECT_GE(b.machine_total_seconds, b.machine_busy_seconds);
  // Clock ticks are 10 ms: allow one tick of the machine's counter against getrusage's µs.
  EXPECT_GE(b.machine_busy_seconds - a.machine_busy_seconds,
            b.process_seconds - a.process_seconds - 0.011);
}

// Two hosts: h0 runs ranks 0 and 1 (4 s and 3 s of CPU) while its CPUs were busy 9 s of 20;
// h1 runs rank 2 (5 s) and was busy 4.5 s (counters of different machines tick apart: the other
// work is then 0, never negative). Rank 3's /proc/stat was unreadable.
TEST(MachineLoad, OtherWorkIsTheHostsBusyTimeLessTheRunsRanks) {
  std::vector<RankCpu> ranks = {{"h0", true, 9, 20, 4},
                                {"h0", true, 9.2, 20.1, 3},
                                {"h1", true, 4.5, 10, 5},
                                {"h2", false, 0, 0, 1}};
  const auto hosts = summarise_host_load(ranks);
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].host, "h0");
  EXPECT_EQ(hosts[0].ranks, 2);
  EXPECT_DOUBLE_EQ(hosts[0].capacity_seconds, 20);  // from its lowest rank
  EXPECT_DOUBLE_EQ(hosts[0].run_seconds, 7);
  EXPECT_DOUBLE_EQ(hosts[0].other_seconds, 2);
  EXPECT_DOUBLE_EQ(hosts[0].other_share(), 0.1);
  EXPECT_DOUBLE_EQ(hosts[1].other_seconds, 0);
  const auto j = nlohmann::json::parse(host_load_json(hosts));
  EXPECT_DOUBLE_EQ(j["max_other_share"].get<double>(), 0.1);
  EXPECT_EQ(j["hosts"][0]["ranks"].get<int>(), 2);
  EXPECT_EQ(j["hosts"][1]["host"].get<std::string>(), "h1");
}

// The store adds the entry to the run's provenance (keeping what was there); the provenance
// table names the runs timed beside other work.
TEST(MachineLoad, ProvenanceKeepsTheEntryAndTheTableNamesLoadedRuns) {
  const std::string path = ::testing::TempDir() + "machine_load_test.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  {
    ResultStore store(path);
    for (int seed : {1, 2, 3}) {
      RunRecord rec;
      rec.suite = "load";
      rec.name = "dense";
      rec.algorithm = "dense";
      rec.model = "lenet5";
      rec.dataset = "fashion-mnist";
      rec.seed = seed;
      rec.config = "seed: " + std::to_string(seed);
      rec.config_hash = rec.config;
      rec.code_version = rec.host = rec.backend = "test";
      rec.provenance = seed == 3 ? "" : R"({"command": "cedar run x.yaml"})";
      const int64_t id = store.begin_run(rec);
      if (seed != 2)
        store.set_provenance_entry(id, "machine_load",
                                   host_load_json({{"h0", 2, 20, 7, seed == 1 ? 0.4 : 3.0}}));
      store.finish_run(id, "completed", "", RunSummary{});
    }
  }
  const auto runs = load_provenance(path, "load");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].command, "cedar run x.yaml");  // kept beside the new entry
  EXPECT_DOUBLE_EQ(runs[0].other_load, 0.02);
  EXPECT_LT(runs[1].other_load, 0);  // not recorded
  EXPECT_DOUBLE_EQ(runs[2].other_load, 0.15);
  const std::string md = render_provenance_markdown(runs);
  EXPECT_NE(md.find("timed beside other work (over 5.0%): dense (seed 3, 15.0%)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Not recorded for 1 run(s)."), std::string::npos) << md;
  EXPECT_NE(md.find("(seed 1, completed, other processes used 2.0% of its host's CPU)"),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace cedar
