#pragma once
// How much of each host other work used while a run was timed. Every rank samples the CPU time of
// its machine and of itself (platform/cpu_time.h) when training starts and when it ends; rank 0
// groups the ranks by host: the host's busy CPU time over the run less what the run's own ranks
// on it used is other processes' (a compiler, a fuzzer, another run), reported as a share of the
// host's capacity (its CPUs × the wall time). Stored in the run's provenance as "machine_load"
// and shown by `cedar report --provenance`, so a referee can tell runs timed on a quiet machine
// from runs timed beside other work.
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "platform/cpu_time.h"

namespace cedar {

// One rank's CPU time over the run.
struct RankCpu {
  std::string host;
  bool machine_known = false;
  double machine_busy_seconds = 0, machine_total_seconds = 0;  // the host's, over the run
  double process_seconds = 0;                                  // the rank's own
};

struct HostLoad {
  std::string host;
  int ranks = 0;
  double capacity_seconds = 0;  // every CPU of the host over the run
  double run_seconds = 0;       // the run's ranks on it
  double other_seconds = 0;     // other processes: busy − the run's, at least 0
  double other_share() const { return capacity_seconds > 0 ? other_seconds / capacity_seconds : 0; }
};

// The ranks' deltas grouped by host (first appearance order). A host whose /proc/stat could not be
// read is left out. The host's machine figures come from its lowest rank.
std::vector<HostLoad> summarise_host_load(const std::vector<RankCpu>& ranks);
// The provenance entry: {"hosts": [{host, ranks, capacity_s, run_cpu_s, other_cpu_s,
// other_share}], "max_other_share": m}.
std::string host_load_json(const std::vector<HostLoad>& hosts);

// Collective on `control`: every rank's CPU time between `start` and `end`, with its host name.
std::vector<RankCpu> gather_rank_cpu(const CpuTimeSample& start, const CpuTimeSample& end,
                                     const std::string& host, Communicator& control);

}  // namespace cedar
