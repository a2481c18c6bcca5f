#pragma once
// Starts `cedar run` for one suite run on N ranks: mpirun locally, srun inside a Slurm
// allocation, or directly for one rank outside both (child processes: platform/process.h).
// No LibTorch here.
#include <optional>
#include <string>
#include <vector>

#include "runner/suite/cluster_state.h"

namespace cedar {

// The argv that launches this executable's `run` subcommand on `world_size` ranks.
std::vector<std::string> launch_command(int world_size, const std::vector<std::string>& run_args);
// The virtual cluster a run with network.cluster `cluster` starts on: none for "none"; for
// "virtual" the state `cedar cluster up` wrote, checked against the run: world_size at most
// hosts x ranks per host, network.ranks_per_node 0 or the ranks per host. Throws ConfigError
// naming the run otherwise, and when no cluster is up.
std::optional<ClusterState> cluster_for_run(const std::string& cluster, int world_size,
                                            int ranks_per_node, const std::string& run_name);
// launch_command, or the cluster's launch when `cluster` is given.
std::vector<std::string> launch_command(int world_size, const std::vector<std::string>& run_args,
                                        const std::optional<ClusterState>& cluster);
// Runs argv, waits, returns the exit status (128+signal when killed).
int run_process(const std::vector<std::string>& argv);
// `s` as one word for bash (single-quoted when it holds anything but safe characters).
std::string shell_word(const std::string& s);
// Path of the running executable.
std::string self_executable();

}  // namespace cedar
