#include "runner/suite/launcher.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <regex>
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
  const pid_t pid = spawn_process(argv, nullptr);
  if (pid < 0) throw std::runtime_error("cannot start " + argv[0]);
  return wait_exit_status(pid);
}

pid_t spawn_process(const std::vector<std::string>& argv,
                    const posix_spawn_file_actions_t* actions) {
  if (argv.empty()) return -1;
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
  return rc == 0 ? pid : -1;
}

int wait_exit_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string shell_word(const std::string& s) {
  static const std::regex safe("[A-Za-z0-9_./:=@%+,-]+");
  if (std::regex_match(s, safe)) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace cedar
