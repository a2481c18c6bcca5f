#include "datasets/fetch/program.h"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "platform/process.h"

namespace cedar {

int run_program(const std::vector<std::string>& argv, const std::function<bool()>& should_stop) {
  if (argv.empty()) throw std::invalid_argument("run_program: empty command");
  int error = 0;
  const pid_t pid = spawn_process(argv, nullptr, &error);
  if (pid < 0) {
    throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(error) +
                             (error == ENOENT ? " (is it installed and on PATH?)" : ""));
  }
  if (!should_stop) return wait_exit_status(pid);
  for (;;) {
    int status = 0;
    if (poll_exit_status(pid, &status)) return status;
    if (should_stop()) {
      kill(pid, SIGTERM);
      wait_exit_status(pid);
      throw std::runtime_error("interrupted: " + argv[0] + " stopped");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace cedar
