#include "runner/launcher.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

extern char** environ;

namespace cedar {

std::string self_executable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the cedar executable (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

std::vector<std::string> launch_command(int world_size, const std::vector<std::string>& run_args) {
  std::vector<std::string> argv;
  const std::string n = std::to_string(world_size);
  if (std::getenv("SLURM_JOB_ID")) {
    argv = {"srun", "--mpi=pmix", "-n", n, "--cpu-bind=none", "--overcommit"};
  } else if (world_size > 1 || std::getenv("CEDAR_ALWAYS_MPIRUN")) {
    argv = {"mpirun", "--oversubscribe", "--bind-to", "none", "-np", n};
    if (geteuid() == 0) argv.insert(argv.begin() + 1, "--allow-run-as-root");
  }
  argv.push_back(self_executable());
  argv.push_back("run");
  argv.insert(argv.end(), run_args.begin(), run_args.end());
  return argv;
}

int run_process(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  // The child starts with no blocked signals (cedar blocks SIGINT/SIGTERM for its watcher thread).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargv[0], nullptr, &attr, cargv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace cedar
