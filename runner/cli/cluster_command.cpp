// `cedar cluster up | down | status`: the virtual cluster of runner/suite/virtual_cluster.h.
#include <cstdio>

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

}  // namespace cedar
