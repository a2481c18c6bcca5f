#include "runner/suite/launcher.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <regex>
#include <stdexcept>

#include "platform/process.h"

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

std::string shell_word(const std::string& s) {
  static const std::regex safe("[A-Za-z0-9_./:=@%+,-]+");
  if (std::regex_match(s, safe)) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace cedar
