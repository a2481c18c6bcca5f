#pragma once
// The provenance of each run of a suite (runs.provenance, runner/train/provenance.h) as a table:
// what ran, where, with which libraries. No LibTorch here.
#include <string>
#include <vector>

namespace cedar {

struct RunProvenance {
  int64_t id = 0, seed = 0, threads = 0;
  std::string name, status, host, revision;
  // The commit's full hash and the SHA-256 of the uncommitted changes built with it ("" for a
  // clean tree or a run written before they were recorded; runner/source_revision.h).
  std::string commit, diff;
  std::string command, torch, mpi, nccl, cuda, cpu, gpu;
  int64_t cpu_count = 0;
  // The shaped links of a run on the virtual cluster, e.g. "virtual cluster 2x1, 1gbit full
  // duplex per host (tbf, burst 256kb)"; "" for a run on this machine's own links.
  std::string links;
  bool recorded = false;  // false for runs written before provenance was stored
  // The largest share of a host's CPU time other processes used while the run trained
  // (runner/train/machine_load.h); < 0: not recorded.
  double other_load = -1;
};

// The latest run of each (name, seed) in `suite` (all suites when empty), in run order.
std::vector<RunProvenance> load_provenance(const std::string& db_path, const std::string& suite);
// Runs whose hosts other work loaded by more than this share of their CPU time while they trained
// are named as timed beside other work.
inline constexpr double kQuietMachineShare = 0.05;
// A run whose recorded load (RunProvenance::other_load) was at most kQuietMachineShare: the time
// figures of reports come from such runs where an arm has any. Unrecorded (< 0) is not quiet.
inline bool timed_on_quiet_host(double other_load) {
  return other_load >= 0 && other_load <= kQuietMachineShare;
}
// RunProvenance::other_load from a run's provenance JSON (runs.provenance): < 0 where the JSON or
// its machine_load is missing.
double other_load_of(const std::string& provenance_json);

// Where a table's time figures come from, per run name: its seeds, those the times were taken
// from, and whether any of those was timed beside other work (no seed of it was quiet).
struct TimedArm {
  std::string name;
  int seeds = 0, timed = 0;
  bool beside_other_work = false;
};
// One sentence, `lead` + " the seeds timed on a quiet host (...)" naming the runs whose times
// leave seeds out and those with no quiet seed; "" when no run recorded its hosts' load
// (`recorded` false).
std::string timing_sources_note(const std::string& lead, const std::vector<TimedArm>& arms,
                                bool recorded);

// A markdown table of the environments (runs that share one are listed together) and each
// run's command line, with the share of its hosts' CPU time other work used. A revision built with
// uncommitted changes is marked (reports/ uncommitted_runs.h) with the hash of those changes.
std::string render_provenance_markdown(const std::vector<RunProvenance>& runs);
// One line per distinct set of shaped links, "Seconds measured on shaped links: <links>: <runs>",
// for a comparison table to say where its seconds come from; "" when no run had shaped links.
std::string render_links_note(const std::vector<RunProvenance>& runs);

}  // namespace cedar
