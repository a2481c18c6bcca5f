#include "runner/suite/cluster_state.h"

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>

#include "platform/atomic_file.h"

namespace cedar {
namespace {

// Open MPI's rsh agent: it is called as `agent HOST [options] COMMAND...` and runs the daemon's
// command inside the host's namespace instead of over ssh. Only Cedar's namespaces are entered.
const char* const kAgent = R"SH(#!/bin/bash
# Written by `cedar cluster up`: Open MPI starts its daemons on the virtual hosts through this.
h=$1; shift
while [[ $1 == -* ]]; do shift; done
case "$h" in
  cedar-h[0-9]*) ;;
  *) echo "rsh-agent: $h is not a host of the virtual cluster" >&2; exit 1 ;;
esac
# This host's own Open MPI session folders and shared-memory segments (cluster_state.h).
files=/dev/shm/$h
mkdir -p "$files" || exit 1
export OMPI_MCA_orte_tmpdir_base="$files" OMPI_MCA_btl_vader_backing_directory="$files"
exec ip netns exec "$h" /bin/sh -c "$*"
)SH";

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  write_file_atomically(path, text, PublishOptions{false, mode});
}

double scaled(const std::smatch& m, double unit) { return std::stod(m[1].str()) * unit; }

}  // namespace

std::string cluster_dir() {
  const char* d = std::getenv("CEDAR_CLUSTER_DIR");
  return d && *d ? d : "/run/cedar-cluster";
}

double rate_bits_per_second(const std::string& rate) {
  static const std::regex re("([0-9]+(\\.[0-9]+)?)(bit|kbit|mbit|gbit)");
  std::smatch m;
  if (!std::regex_match(rate, m, re))
    throw std::invalid_argument("rate '" + rate +
                                "': expected a number with bit, kbit, mbit or gbit (e.g. 1gbit)");
  const std::string u = m[3].str();
  return scaled(m, u == "bit" ? 1 : u == "kbit" ? 1e3 : u == "mbit" ? 1e6 : 1e9);
}

int64_t burst_bytes(const std::string& burst) {
  static const std::regex re("([0-9]+)(b|kb|mb)");
  std::smatch m;
  if (!std::regex_match(burst, m, re))
    throw std::invalid_argument("burst '" + burst +
                                "': expected a whole number with b, kb or mb (e.g. 256kb)");
  const std::string u = m[2].str();
  return static_cast<int64_t>(scaled(m, u == "b" ? 1 : u == "kb" ? 1024 : 1024 * 1024));
}

void validate_spec(const ClusterSpec& spec) {
  if (spec.hosts < 1 || spec.hosts > 64)
    throw std::invalid_argument("--hosts " + std::to_string(spec.hosts) + ": expected 1 to 64");
  if (spec.ranks_per_host < 1 || spec.ranks_per_host > 256)
    throw std::invalid_argument("--ranks-per-host " + std::to_string(spec.ranks_per_host) +
                                ": expected 1 to 256");
  if (rate_bits_per_second(spec.rate) < 8e3)
    throw std::invalid_argument("rate '" + spec.rate + "': below 8kbit");
  const int64_t b = burst_bytes(spec.burst);
  if (b < 1600 || b > 64 * 1024 * 1024)
    throw std::invalid_argument("burst '" + spec.burst + "': expected 1600b (one frame) to 64mb");
  static const std::regex subnet("10\\.([0-9]{1,3})\\.([0-9]{1,3})");
  std::smatch m;
  if (!std::regex_match(spec.subnet, m, subnet) || std::stoi(m[1].str()) > 255 ||
      std::stoi(m[2].str()) > 255)
    throw std::invalid_argument("subnet '" + spec.subnet +
                                "': expected the first three parts of a private 10.x.y.0/24");
}

std::string ClusterState::describe() const {
  return std::to_string(spec.hosts) + " host" + (spec.hosts == 1 ? "" : "s") + " x " +
         std::to_string(spec.ranks_per_host) + " rank" + (spec.ranks_per_host == 1 ? "" : "s") +
         ", " + spec.rate + " full duplex per host (" + qdisc + ", burst " + spec.burst + ")";
}

std::string ClusterState::links_json() const {
  // Every value is validated (numbers and unit words), so none needs escaping.
  return "{\"cluster\":\"virtual\",\"hosts\":" + std::to_string(spec.hosts) +
         ",\"ranks_per_host\":" + std::to_string(spec.ranks_per_host) + ",\"rate\":\"" + spec.rate +
         "\",\"burst\":\"" + spec.burst + "\",\"latency\":\"" + spec.latency + "\",\"qdisc\":\"" +
         qdisc + "\",\"subnet\":\"" + cidr() + "\"}";
}

std::optional<ClusterState> read_cluster_state(const std::string& dir) {
  ClusterState s;
  s.dir = dir;
  std::ifstream probe(s.state_file());
  if (!probe) return std::nullopt;
  YAML::Node n;
  try {
    n = YAML::LoadFile(s.state_file());
    s.spec.hosts = n["hosts"].as<int>();
    s.spec.ranks_per_host = n["ranks_per_host"].as<int>();
    s.spec.rate = n["rate"].as<std::string>();
    s.spec.burst = n["burst"].as<std::string>();
    s.spec.latency = n["latency"].as<std::string>();
    s.spec.subnet = n["subnet"].as<std::string>();
    s.qdisc = n["qdisc"].as<std::string>();
    validate_spec(s.spec);
  } catch (const std::exception& e) {
    throw std::runtime_error(s.state_file() + ": not a cluster state (" + e.what() +
                             "); `cedar cluster down` removes it");
  }
  return s;
}

void write_cluster_state(const ClusterState& s) {
  if (mkdir(s.dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + s.dir + ": " + std::strerror(errno));
  std::string hosts;
  for (int i = 0; i < s.spec.hosts; ++i)
    hosts += s.host(i) + " slots=" + std::to_string(s.spec.ranks_per_host) + "\n";
  write_file(s.hostfile(), hosts, 0644);
  write_file(s.agent(), kAgent, 0755);
  YAML::Emitter y;
  y << YAML::BeginMap << YAML::Key << "hosts" << YAML::Value << s.spec.hosts << YAML::Key
    << "ranks_per_host" << YAML::Value << s.spec.ranks_per_host << YAML::Key << "rate"
    << YAML::Value << s.spec.rate << YAML::Key << "burst" << YAML::Value << s.spec.burst
    << YAML::Key << "latency" << YAML::Value << s.spec.latency << YAML::Key << "qdisc"
    << YAML::Value << s.qdisc << YAML::Key << "subnet" << YAML::Value << s.spec.subnet << YAML::Key
    << "bridge" << YAML::Value << kClusterBridge << YAML::Key << "hostfile" << YAML::Value
    << s.hostfile() << YAML::Key << "agent" << YAML::Value << s.agent() << YAML::EndMap;
  write_file(s.state_file(), std::string(y.c_str()) + "\n", 0644);
}

std::vector<std::string> remove_cluster_host_files() {
  static const std::regex ours("cedar-h[0-9]+");
  std::vector<std::string> removed;
  DIR* d = ::opendir(kClusterHostFiles);
  if (!d) return removed;
  while (const dirent* e = ::readdir(d))
    if (std::regex_match(e->d_name, ours))
      removed.push_back(kClusterHostFiles + ("/" + std::string(e->d_name)));
  ::closedir(d);
  // Not std::filesystem::remove_all: in executables linked with the LibTorch wheel it binds to
  // the wheel's own copy, which crashes.
  for (const auto& folder : removed)
    ::nftw(
        folder.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  return removed;
}

void remove_cluster_state(const std::string& dir) {
  ClusterState s;
  s.dir = dir;
  for (const std::string& f : {s.state_file(), s.hostfile(), s.agent()}) std::remove(f.c_str());
  rmdir(dir.c_str());  // only when empty: a folder the user chose keeps their other files
}

std::vector<std::string> cluster_launch_command(const ClusterState& s, int world_size,
                                                const std::vector<std::string>& run_args,
                                                const std::string& executable) {
  std::vector<std::string> argv = {
      "mpirun", "--hostfile", s.hostfile(), "--map-by", "slot", "--bind-to", "none", "-np",
      std::to_string(world_size), "--mca", "plm_rsh_agent", s.agent(), "--mca", "btl",
      "tcp,vader,self", "--mca", "btl_tcp_if_include", s.cidr(), "--mca", "oob_tcp_if_include",
      s.cidr(),
      // A host whose link died: mpirun's connection to its daemon
      // gives up after a few seconds of unanswered TCP keepalives
      // (3 s idle, 2 probes 2 s apart) instead of many minutes, so
      // the job ends once its ranks have (network.collective_timeout_s).
      "--mca", "oob_tcp_keepalive_time", "3", "--mca", "oob_tcp_keepalive_intvl", "2", "--mca",
      "oob_tcp_keepalive_probes", "2", "-x", "CEDAR_CLUSTER_LINKS"};
  if (geteuid() == 0) argv.insert(argv.begin() + 1, "--allow-run-as-root");
  argv.push_back(executable);
  argv.push_back("run");
  argv.insert(argv.end(), run_args.begin(), run_args.end());
  return argv;
}

}  // namespace cedar
