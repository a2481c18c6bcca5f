#pragma once
// Child processes: start a program with no blocked signals, wait for it, read its exit status.
// The lowest layer with config/: POSIX only, no LibTorch, nothing else of Cedar's.
#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace cedar {

// Starts argv (argv[0] looked up on PATH) with `actions` (may be null) and no blocked signals:
// cedar blocks SIGINT/SIGTERM for its watcher thread, the child must not inherit that. Returns
// the child's pid, or -1 when it could not start (the reason, an errno value, in *error when
// given; EINVAL for an empty argv).
pid_t spawn_process(const std::vector<std::string>& argv, const posix_spawn_file_actions_t* actions,
                    int* error = nullptr);
// Waits for `pid` (retrying when a signal interrupts); its exit status, 128+signal when killed,
// 1 when it cannot be waited for.
int wait_exit_status(pid_t pid);
// Without waiting: true and *status (as wait_exit_status) when `pid` has ended.
bool poll_exit_status(pid_t pid, int* status);
// Runs argv (no shell) with its standard output and error captured into *output, waits, and
// returns its exit status; 127 when it could not start (the reason in *output).
int run_captured(const std::vector<std::string>& argv, std::string* output);

}  // namespace cedar
