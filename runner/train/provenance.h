#pragma once
// What a reader needs to reproduce a run, stored with its record (runs.provenance, JSON): the
// command line, library versions (LibTorch, MPI, NCCL, CUDA), the CPU and GPU, the threads each
// rank used and the source revision: its description ("revision", as runs.code_version), full
// commit hash ("commit") and the hash of the uncommitted changes it was built with ("diff", empty
// for a clean tree; runner/source_revision.h), and for a run on the virtual cluster its "links"
// (hosts, ranks per host, rate, burst, qdisc; runner/suite/cluster_state.h). `cedar report
// --provenance` prints it.
#include <string>

namespace cedar {

// Remembers this process's command line (called once from main).
void set_command_line(int argc, char** argv);
const std::string& command_line();

// The provenance of a run on this process, as a JSON object. `gpu_device` < 0: no GPU used.
std::string collect_provenance(int threads, int gpu_device);

}  // namespace cedar
