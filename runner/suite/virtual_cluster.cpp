#include "runner/suite/virtual_cluster.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <regex>
#include <sstream>

#include "platform/process.h"

namespace cedar {
namespace {

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Runs one `ip` / `tc` command; throws naming it and its output when it fails.
std::string must(const std::vector<std::string>& argv) {
  std::string out;
  const int rc = run_captured(argv, &out);
  if (rc == 127)
    throw ClusterUnavailable("`" + argv[0] + "` not found (" + trimmed(out) +
                             "); the virtual cluster needs iproute2's ip and tc");
  if (rc != 0) {
    const std::string msg =
        "`" + joined(argv) + "` failed (exit " + std::to_string(rc) + "): " + trimmed(out);
    if (argv[0] == "tc" && out.find("nknown qdisc") != std::string::npos)
      throw ClusterUnavailable(msg + " (the kernel lacks the tbf qdisc, module sch_tbf)");
    if (joined(argv).rfind("ip netns add", 0) == 0)
      throw ClusterUnavailable(msg + " (network namespaces unavailable)");
    throw std::runtime_error(msg);
  }
  return out;
}

void require_tools() {
  if (geteuid() != 0)
    throw ClusterUnavailable(
        "the virtual cluster needs root (network namespaces, veth pairs and qdiscs need "
        "CAP_NET_ADMIN); run `cedar cluster` as root");
  must({"ip", "-V"});
  must({"tc", "-V"});
}

std::vector<std::string> namespaces() {
  static const std::regex ours("cedar-h[0-9]+");
  std::vector<std::string> out;
  std::istringstream in(must({"ip", "netns", "list"}));
  std::string line;
  while (std::getline(in, line)) {
    const std::string name = line.substr(0, line.find(' '));
    if (std::regex_match(name, ours)) out.push_back(name);
  }
  return out;
}

// Links in this (the root) namespace named like Cedar's bridge or bridge-side veths.
std::vector<std::string> links() {
  static const std::regex ours("cedar-(br0|v[0-9]+)");
  std::vector<std::string> out;
  std::istringstream in(must({"ip", "-o", "link", "show"}));
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(": ");
    if (a == std::string::npos) continue;
    std::string name = line.substr(a + 2);
    name = name.substr(0, name.find_first_of(":@"));
    if (std::regex_match(name, ours)) out.push_back(name);
  }
  return out;
}

std::vector<std::string> tbf(const ClusterSpec& spec) {
  return {"root", "tbf", "rate", spec.rate, "burst", spec.burst, "latency", spec.latency};
}

// An address of the cluster's /24 already used outside the cluster would make it route elsewhere.
void check_subnet_free(const ClusterSpec& spec) {
  const std::string prefix = " " + spec.subnet + ".";
  std::istringstream in(must({"ip", "-o", "-4", "addr", "show"}));
  std::string line;
  while (std::getline(in, line))
    if (line.find(prefix) != std::string::npos)
      throw std::runtime_error("subnet " + spec.subnet + ".0/24 is already in use here (" +
                               trimmed(line) + "); choose another with --subnet");
}

void build(const ClusterState& s) {
  const std::string br = kClusterBridge;
  must({"ip", "link", "add", br, "type", "bridge"});
  must({"ip", "addr", "add", s.bridge_address() + "/24", "dev", br});
  must({"ip", "link", "set", br, "up"});
  for (int i = 0; i < s.spec.hosts; ++i) {
    const std::string h = s.host(i), v = s.veth(i);
    must({"ip", "netns", "add", h});
    must({"ip", "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", h});
    must({"ip", "link", "set", v, "master", br});
    must({"ip", "link", "set", v, "up"});
    must({"ip", "-n", h, "link", "set", "lo", "up"});
    must({"ip", "-n", h, "addr", "add", s.host_address(i) + "/24", "dev", "eth0"});
    must({"ip", "-n", h, "link", "set", "eth0", "up"});
    // Both directions: into the host (the bridge side's egress) and out of it (eth0's egress).
    std::vector<std::string> in = {"tc", "qdisc", "add", "dev", v};
    std::vector<std::string> out = {"tc", "-n", h, "qdisc", "add", "dev", "eth0"};
    for (const auto& a : tbf(s.spec)) {
      in.push_back(a);
      out.push_back(a);
    }
    must(in);
    must(out);
  }
}

}  // namespace

std::vector<std::string> find_cluster_leftovers() {
  require_tools();
  std::vector<std::string> found;
  for (const auto& n : namespaces()) found.push_back("netns " + n);
  for (const auto& l : links()) found.push_back("link " + l);
  return found;
}

std::vector<std::string> remove_cluster(const std::string& dir) {
  require_tools();
  std::vector<std::string> removed;
  // Deleting a namespace deletes its eth0 and so the veth's other end; what is left (a bridge,
  // a veth whose namespace is gone) is deleted by name. A process still inside a host (a daemon
  // whose link died, a rank of an interrupted job) is killed first: it would otherwise outlive
  // the host it ran on.
  for (const auto& n : namespaces()) {
    std::string pids;
    if (run_captured({"ip", "netns", "pids", n}, &pids) == 0) {
      std::istringstream in(pids);
      for (long pid = 0; in >> pid;)
        if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
    must({"ip", "netns", "delete", n});
    removed.push_back("netns " + n);
  }
  for (const auto& l : links()) {
    std::string out;
    if (run_captured({"ip", "link", "delete", l}, &out) == 0) removed.push_back("link " + l);
  }
  const std::vector<std::string> left = links();
  if (!left.empty()) throw std::runtime_error("could not remove link(s): " + joined(left));
  for (const auto& folder : remove_cluster_host_files()) removed.push_back("folder " + folder);
  remove_cluster_state(dir);
  return removed;
}

ClusterState create_cluster(const ClusterSpec& spec, const std::string& dir, std::FILE* log) {
  validate_spec(spec);
  require_tools();
  if (auto up = read_cluster_state(dir))
    throw std::runtime_error("a virtual cluster is already up (" + up->describe() + ", " +
                             up->state_file() + "); `cedar cluster down` removes it");
  const std::vector<std::string> leftovers = find_cluster_leftovers();
  if (!leftovers.empty()) {
    std::fprintf(log, "removing leftovers of an earlier cluster: %s\n", joined(leftovers).c_str());
    remove_cluster(dir);
  }
  check_subnet_free(spec);
  ClusterState s;
  s.spec = spec;
  s.dir = dir;
  try {
    build(s);
    write_cluster_state(s);
  } catch (...) {
    try {
      remove_cluster(dir);
    } catch (...) {
    }
    throw;
  }
  return s;
}

std::vector<std::string> verify_cluster(const ClusterState& s) {
  require_tools();
  std::vector<std::string> lines;
  for (int i = 0; i < s.spec.hosts; ++i) {
    std::string into, out;
    const std::string v = s.veth(i), h = s.host(i);
    if (run_captured({"tc", "qdisc", "show", "dev", v}, &into) != 0 ||
        run_captured({"tc", "-n", h, "qdisc", "show", "dev", "eth0"}, &out) != 0)
      throw std::runtime_error("host " + h + " or its link " + v +
                               " is missing; `cedar cluster down` removes the rest");
    if (into.find(s.qdisc) == std::string::npos || out.find(s.qdisc) == std::string::npos)
      throw std::runtime_error("the link of host " + h + " is not shaped (no " + s.qdisc +
                               " qdisc); `cedar cluster down` and `up` again");
    lines.push_back(h + " " + s.host_address(i) + "  in (" + v + "): " + trimmed(into));
    lines.push_back(h + " " + s.host_address(i) + "  out (eth0): " + trimmed(out));
  }
  return lines;
}

}  // namespace cedar
