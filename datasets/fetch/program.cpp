#include "datasets/fetch/program.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace cedar {
namespace {

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int run_program(const std::vector<std::string>& argv, const std::function<bool()>& should_stop) {
  if (argv.empty()) throw std::invalid_argument("run_program: empty command");
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  // The child must not inherit the signal mask of cedar's signal-watching threads.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, cargv[0], nullptr, &attr, cargv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(rc) +
                             (rc == ENOENT ? " (is it installed and on PATH?)" : ""));
  }
  int status = 0;
  if (!should_stop) {
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) return 1;
    return exit_status(status);
  }
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return exit_status(status);
    if (done < 0 && errno != EINTR) return 1;
    if (should_stop()) {
      kill(pid, SIGTERM);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      throw std::runtime_error("interrupted: " + argv[0] + " stopped");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace cedar
