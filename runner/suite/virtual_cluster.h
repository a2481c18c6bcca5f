#pragma once
// Building and removing the virtual cluster (runner/suite/cluster_state.h) with `ip` and `tc`,
// each started as a program with its own arguments (platform/process.h), never through a shell.
// No LibTorch here.
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/suite/cluster_state.h"

namespace cedar {

// What the machine lacks for a virtual cluster: root, `ip`, `tc`, network namespaces or the tbf
// qdisc. `cedar cluster` exits with status 4 on it (tests skip on that status).
class ClusterUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Cedar's namespaces and links left on this machine (by prefix), e.g. by a killed `up`:
// "netns cedar-h0", "link cedar-br0", ...
std::vector<std::string> find_cluster_leftovers();
// Removes every namespace, veth and bridge of Cedar's (their qdiscs go with them) and the state
// files in `dir`; returns what it removed. Idempotent: nothing left is nothing to do.
std::vector<std::string> remove_cluster(const std::string& dir);
// Builds the cluster and writes its state into `dir`. Refuses when a cluster is already up (its
// state file exists: `cedar cluster down` first). Leftovers without a state file (an `up` that
// was killed, a `down` that never ran) are named on `log` and removed first. On a failed step
// everything made so far is removed and the error names the command and its output.
ClusterState create_cluster(const ClusterSpec& spec, const std::string& dir, std::FILE* log);
// The qdisc lines of every shaped link (bridge side and host side), for `cedar cluster status`;
// throws when a host or its shaping is missing.
std::vector<std::string> verify_cluster(const ClusterState& state);

}  // namespace cedar
