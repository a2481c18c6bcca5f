#include "runner/suite/launcher.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <regex>
#include <stdexcept>

#include "config/params.h"
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

std::optional<ClusterState> cluster_for_run(const std::string& cluster, int world_size,
                                            int ranks_per_node, const std::string& run_name) {
  if (cluster != "virtual") return std::nullopt;
  const std::string run = "run '" + run_name + "': network.cluster: virtual: ";
  std::optional<ClusterState> s = read_cluster_state(cluster_dir());
  if (!s)
    throw ConfigError(run + "no virtual cluster is up (no " + cluster_dir() +
                      "/cluster.yaml); start one with `cedar cluster up --hosts N "
                      "--ranks-per-host R --bandwidth RATE`");
  const int slots = s->spec.hosts * s->spec.ranks_per_host;
  if (world_size > slots)
    throw ConfigError(run + std::to_string(world_size) + " ranks do not fit on " + s->describe() +
                      " (" + std::to_string(slots) + " slots)");
  if (ranks_per_node != 0 && ranks_per_node != s->spec.ranks_per_host)
    throw ConfigError(run + "network.ranks_per_node " + std::to_string(ranks_per_node) +
                      " differs from the cluster's " + std::to_string(s->spec.ranks_per_host) +
                      " ranks per host (set it to 0 or " + std::to_string(s->spec.ranks_per_host) +
                      ")");
  return s;
}

std::vector<std::string> launch_command(int world_size, const std::vector<std::string>& run_args,
                                        const std::optional<ClusterState>& cluster) {
  if (!cluster) return launch_command(world_size, run_args);
  return cluster_launch_command(*cluster, world_size, run_args, self_executable());
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
