#pragma once
// What a run does when one of its operations outlives network.collective_timeout_s
// (comm/collective_watchdog.h): the rank whose watchdog fired prints the report, marks the run's
// record failed with it through a connection of its own (as a signal does, run_guard.h: rows
// written before stay), and ends the job with MPI_Abort, so that no rank waits on a dead link.
// The stuck rank may be any rank, rank 0 included, so every rank knows the record: rank 0 shares
// its path (the database, or its shard) and id at the start. Whichever rank marks it first names
// itself; a record no longer running is left as it is.
#include <cstdint>
#include <memory>
#include <string>

#include "comm/collective_watchdog.h"

namespace cedar {

// A watchdog of `limit_seconds` on world rank `rank` that does the above; null when the limit is 0.
std::unique_ptr<CollectiveWatchdog> make_run_watchdog(double limit_seconds, int rank);
// The record an expiry marks failed (every rank), and the end of the run.
void set_watched_run(const std::string& results_path, int64_t run_id);
void clear_watched_run();

}  // namespace cedar
