#include "platform/process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;

namespace cedar {
namespace {

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

pid_t spawn_process(const std::vector<std::string>& argv, const posix_spawn_file_actions_t* actions,
                    int* error) {
  if (argv.empty()) {
    if (error) *error = EINVAL;
    return -1;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, cargv[0], actions, &attr, cargv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (error) *error = rc;
  return rc == 0 ? pid : -1;
}

int wait_exit_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  return exit_status(status);
}

bool poll_exit_status(pid_t pid, int* status) {
  int raw = 0;
  pid_t done = 0;
  do {
    done = waitpid(pid, &raw, WNOHANG);
  } while (done < 0 && errno == EINTR);
  if (done == 0) return false;
  *status = done == pid ? exit_status(raw) : 1;
  return true;
}

}  // namespace cedar
