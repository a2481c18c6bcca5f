#pragma once
// CPU time of the whole machine and of this process, sampled before and after a run so a report
// can say how much of the machine other work used while the run was timed (a run timed beside a
// compiler or a fuzzer measures that contention, not the method). POSIX and Linux's /proc/stat;
// nothing of Cedar's.
#include <string>

namespace cedar {

struct CpuTimeSample {
  bool machine_known = false;        // /proc/stat was readable
  double machine_busy_seconds = 0;   // every CPU's non-idle time since boot
  double machine_total_seconds = 0;  // every CPU's time since boot, idle included
  double process_seconds = 0;        // this process's user + system time, all its threads
};

// Parses the first ("cpu") line of /proc/stat: user nice system idle iowait irq softirq steal
// (guest time is already inside user). Busy = user + nice + system + irq + softirq + steal; idle =
// idle + iowait. `ticks_per_second` converts (sysconf(_SC_CLK_TCK)). Returns false, leaving `out`
// untouched, for a line that is not one.
bool parse_proc_stat_cpu_line(const std::string& line, double ticks_per_second, CpuTimeSample& out);

// Now, for this machine and process.
CpuTimeSample sample_cpu_time();

}  // namespace cedar
