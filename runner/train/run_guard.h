#pragma once
// Turns SIGINT / SIGTERM into a clean failure: the signal is noted for the training loop to stop
// at the next step, the active run is marked failed at once (through its own database
// connection), and if the process is stuck (e.g. inside a collective whose peer died) it exits
// after a short grace period. No LibTorch here.
#include <cstdint>
#include <string>

namespace cedar {

// Call first in main(), before any thread starts: blocks the signals in every thread and starts
// the watcher thread that receives them.
void install_signal_watch();
// The signal received (0 if none).
int stop_signal();
// The run to mark failed if the process is interrupted.
void set_active_run(const std::string& db_path, int64_t run_id);
void clear_active_run();

}  // namespace cedar
