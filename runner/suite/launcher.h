#pragma once
// Starts `cedar run` for one suite run on N ranks: mpirun locally, srun inside a Slurm
// allocation, or directly for one rank outside both (child processes: platform/process.h).
// No LibTorch here.
#include <string>
#include <vector>

namespace cedar {

// The argv that launches this executable's `run` subcommand on `world_size` ranks.
std::vector<std::string> launch_command(int world_size, const std::vector<std::string>& run_args);
// Runs argv, waits, returns the exit status (128+signal when killed).
int run_process(const std::vector<std::string>& argv);
// `s` as one word for bash (single-quoted when it holds anything but safe characters).
std::string shell_word(const std::string& s);
// Path of the running executable.
std::string self_executable();

}  // namespace cedar
