#include "platform/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

int run_captured(const std::vector<std::string>& argv, std::string* output) {
  output->clear();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *output = std::string("pipe: ") + std::strerror(errno);
    return 127;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  int error = 0;
  const pid_t pid = spawn_process(argv, &actions, &error);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    *output = (argv.empty() ? std::string("(no program)") : argv[0]) + ": " + std::strerror(error);
    return 127;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) output->append(buf, static_cast<size_t>(n));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  close(fds[0]);
  return wait_exit_status(pid);
}

}  // namespace cedar
