#pragma once
// The measured medians behind a calibrated profile, as a YAML file that `cedar network calibrate
// --timings` writes and `cedar network fit` reads back, so that a profile can be fitted again
// (over a range of sizes, say) without timing the link again:
//
//   measured_on: "virtual cluster: 2 hosts x 1 rank, 100 Mbit/s"
//   timings:
//     - {op: allreduce, P: 2, bytes: 65536, calls: 20, seconds: 0.0061}
//
// `seconds` is the median time of one call, `calls` the calls back to back in each timed loop.
// No LibTorch, no MPI here.
#include <string>
#include <vector>

#include "comm/calibrated_profile.h"

namespace cedar {

struct CollectiveTimingsFile {
  std::string measured_on;  // where the timings were measured (free text)
  std::vector<CollectiveTiming> timings;
};

// Writes `file` to `path` with every number to 15 significant digits (what the loader keeps).
// Throws std::runtime_error when the file cannot be written.
void write_collective_timings(const std::string& path, const CollectiveTimingsFile& file);

// Throws ConfigError naming the file, line, column and key at fault: a YAML error, no `timings`
// list, an unknown key, an op that is not a calibrated collective, P < 2, bytes not a positive
// multiple of 4, calls < 1, seconds <= 0, or the same op, P and bytes twice.
CollectiveTimingsFile load_collective_timings(const std::string& path);

}  // namespace cedar
