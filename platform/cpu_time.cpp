#include "platform/cpu_time.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace cedar {

bool parse_proc_stat_cpu_line(const std::string& line, double ticks_per_second,
                              CpuTimeSample& out) {
  std::istringstream in(line);
  std::string label;
  in >> label;
  if (label != "cpu" || ticks_per_second <= 0) return false;
  unsigned long long f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int read = 0;
  while (read < 8 && in >> f[read]) ++read;
  if (read < 4) return false;  // user nice system idle at least, since Linux 2.5
  const double busy = double(f[0] + f[1] + f[2] + f[5] + f[6] + f[7]);
  const double idle = double(f[3] + f[4]);
  out.machine_known = true;
  out.machine_busy_seconds = busy / ticks_per_second;
  out.machine_total_seconds = (busy + idle) / ticks_per_second;
  return true;
}

CpuTimeSample sample_cpu_time() {
  CpuTimeSample s;
  std::ifstream stat("/proc/stat");
  std::string line;
  if (stat && std::getline(stat, line))
    parse_proc_stat_cpu_line(line, double(sysconf(_SC_CLK_TCK)), s);
  rusage self{};
  if (getrusage(RUSAGE_SELF, &self) == 0)
    s.process_seconds = double(self.ru_utime.tv_sec) + 1e-6 * double(self.ru_utime.tv_usec) +
                        double(self.ru_stime.tv_sec) + 1e-6 * double(self.ru_stime.tv_usec);
  return s;
}

}  // namespace cedar
