// `cedar cluster up | down | status`: the virtual cluster of runner/suite/virtual_cluster.h.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "runner/cli/commands.h"
#include "runner/suite/virtual_cluster.h"

namespace cedar {
namespace {

// Status 4: the machine cannot host a virtual cluster (not root, no ip/tc/netns/tbf).
template <class F>
int guarded(const char* what, F f) {
  try {
    return f();
  } catch (const ClusterUnavailable& e) {
    std::fprintf(stderr, "cedar cluster %s: unavailable here: %s\n", what, e.what());
    return 4;
  }
}

void print_state(const ClusterState& s) {
  std::printf("cluster: up, %s\n", s.describe().c_str());
  std::printf("subnet: %s (mpirun on %s, bridge %s)\n", s.cidr().c_str(),
              s.bridge_address().c_str(), kClusterBridge);
  std::printf("hostfile: %s\nagent: %s\nstate: %s\n", s.hostfile().c_str(), s.agent().c_str(),
              s.state_file().c_str());
}

}  // namespace

int command_cluster_up(const ClusterArgs& args) {
  return guarded("up", [&] {
    ClusterSpec spec;
    spec.hosts = args.hosts;
    spec.ranks_per_host = args.ranks_per_host;
    spec.rate = args.bandwidth;
    spec.burst = args.burst;
    spec.subnet = args.subnet;
    const ClusterState s = create_cluster(spec, cluster_dir(), stdout);
    print_state(s);
    return 0;
  });
}

int command_cluster_down() {
  return guarded("down", [&] {
    const auto removed = remove_cluster(cluster_dir());
    if (removed.empty()) std::printf("no virtual cluster: nothing to remove\n");
    for (const auto& r : removed) std::printf("removed %s\n", r.c_str());
    return 0;
  });
}

int command_cluster_status() {
  return guarded("status", [&] {
    const auto state = read_cluster_state(cluster_dir());
    if (!state) {
      std::printf("cluster: down (no state in %s)\n", cluster_dir().c_str());
      const auto left = find_cluster_leftovers();
      for (const auto& l : left) std::printf("leftover: %s\n", l.c_str());
      if (!left.empty()) std::printf("`cedar cluster down` (or the next `up`) removes them\n");
      return 1;
    }
    print_state(*state);
    for (const auto& line : verify_cluster(*state)) std::printf("  %s\n", line.c_str());
    return 0;
  });
}

void add_cluster_commands(CLI::App& app, Subcommands& out) {
  auto cluster_args = std::make_shared<ClusterArgs>();
  auto* cluster = app.add_subcommand(
      "cluster",
      "a virtual cluster on this machine (root): hosts as network namespaces on one bridge, each "
      "link shaped to a rate in both directions; `cedar suite` runs on it with network.cluster: "
      "virtual");
  cluster->require_subcommand(1);
  auto* cluster_up = cluster->add_subcommand(
      "up",
      "create the hosts, bridge, veth pairs and tbf shaping, and write the hostfile, rsh agent "
      "and state (refused while one is up; leftovers of a killed one are removed first)");
  cluster_up->add_option("--hosts", cluster_args->hosts, "virtual hosts (network namespaces)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cluster_up
      ->add_option("--ranks-per-host", cluster_args->ranks_per_host,
                   "MPI slots per host (network.ranks_per_node of its runs)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cluster_up
      ->add_option("--bandwidth", cluster_args->bandwidth,
                   "rate of each host's link, each direction (tc units: 100mbit, 1gbit, ...)")
      ->capture_default_str();
  cluster_up
      ->add_option("--burst", cluster_args->burst,
                   "tbf bucket (b, kb, mb): bytes that pass at once before the rate applies")
      ->capture_default_str();
  cluster_up
      ->add_option("--subnet", cluster_args->subnet,
                   "first three parts of the private /24 (hosts .1.., mpirun's bridge .254)")
      ->capture_default_str();
  auto* cluster_down = cluster->add_subcommand(
      "down",
      "remove every namespace, veth, bridge and qdisc of Cedar's and the state (idempotent)");
  auto* cluster_status = cluster->add_subcommand(
      "status", "print the cluster that is up and each link's shaping (exit 1 when none is up)");
  out.push_back({cluster_up, [cluster_args] { return command_cluster_up(*cluster_args); }});
  out.push_back({cluster_down, [] { return command_cluster_down(); }});
  out.push_back({cluster_status, [] { return command_cluster_status(); }});
}

}  // namespace cedar
