#pragma once
// Starts `cedar run` for one suite run on N ranks: mpirun locally, srun inside a Slurm
// allocation, or directly for one rank outside both; and the process helpers `cedar sbatch` uses
// too. No LibTorch here.
#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace cedar {

// The argv that launches this executable's `run` subcommand on `world_size` ranks.
std::vector<std::string> launch_command(int world_size, const std::vector<std::string>& run_args);
// Runs argv, waits, returns the exit status (128+signal when killed).
int run_process(const std::vector<std::string>& argv);
// Starts argv (argv[0] looked up on PATH) with `actions` (may be null) and no blocked signals:
// cedar blocks SIGINT/SIGTERM for its watcher thread, the child must not inherit that. Returns
// the child's pid, or -1 when it could not start.
pid_t spawn_process(const std::vector<std::string>& argv,
                    const posix_spawn_file_actions_t* actions);
// Waits for `pid` (retrying when a signal interrupts); its exit status, 128+signal when killed,
// 1 when it cannot be waited for.
int wait_exit_status(pid_t pid);
// `s` as one word for bash (single-quoted when it holds anything but safe characters).
std::string shell_word(const std::string& s);
// Path of the running executable.
std::string self_executable();

}  // namespace cedar
