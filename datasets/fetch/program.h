#pragma once
// Runs the well-kept tools a fetch needs (curl, tar) as child processes. No LibTorch here.
#include <functional>
#include <string>
#include <vector>

namespace cedar {

// Runs argv (argv[0] looked up on PATH) with stdin, stdout and stderr inherited and no blocked
// signals, waits for it and returns its exit status (128 + signal when it was killed). While it
// runs, `should_stop` (when given) is asked every 50 ms; once it answers true the child gets
// SIGTERM and the call throws std::runtime_error("interrupted"). Throws std::runtime_error naming
// the program when it cannot be started (e.g. not installed).
int run_program(const std::vector<std::string>& argv,
                const std::function<bool()>& should_stop = nullptr);

}  // namespace cedar
