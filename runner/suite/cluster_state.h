#pragma once
// The virtual cluster on one machine: N network namespaces ("hosts") on one bridge, each joined by
// a veth pair shaped in both directions (tbf) so that it behaves as a full-duplex NIC of the
// given rate. `cedar cluster up` builds it (runner/suite/virtual_cluster.h) and writes this state
// (a YAML file, the hostfile and the rsh agent Open MPI enters the namespaces with) into
// cluster_dir(); `cedar cluster status` prints it, `cedar suite` launches on it
// (network.cluster: virtual), `cedar cluster down` removes it. No LibTorch here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cedar {

// Names are prefixed so that leftovers are recognisably Cedar's: namespaces cedar-h0.., bridge
// cedar-br0, bridge-side veths cedar-v0.. (the host side is eth0 inside each namespace).
inline constexpr const char* kClusterBridge = "cedar-br0";
inline constexpr const char* kClusterHostPrefix = "cedar-h";
inline constexpr const char* kClusterVethPrefix = "cedar-v";
// Each host's Open MPI files (session folders, shared-memory segments) live in
// kClusterHostFiles/<host>: every namespace shares this machine's host name, /tmp and /dev/shm,
// and Open MPI names those files after the host name, so two hosts' ranks would otherwise take
// the same ones (and crash in the shared-memory transport).
inline constexpr const char* kClusterHostFiles = "/dev/shm";

struct ClusterSpec {
  int hosts = 2;
  int ranks_per_host = 1;
  std::string rate = "1gbit";   // tc rate: <number>{bit,kbit,mbit,gbit}
  std::string burst = "256kb";  // tbf bucket: <number>{b,kb,mb}
  std::string latency = "100ms";
  std::string subnet = "10.213.0";  // the /24 the hosts (.1 ..) and mpirun's bridge (.254) use
};

struct ClusterState {
  ClusterSpec spec;
  std::string qdisc = "tbf";
  std::string dir;  // where the files below live
  std::string hostfile() const { return dir + "/hostfile"; }
  std::string agent() const { return dir + "/rsh-agent"; }
  std::string state_file() const { return dir + "/cluster.yaml"; }
  std::string host(int i) const { return kClusterHostPrefix + std::to_string(i); }
  std::string veth(int i) const { return kClusterVethPrefix + std::to_string(i); }
  std::string host_address(int i) const { return spec.subnet + "." + std::to_string(i + 1); }
  std::string bridge_address() const { return spec.subnet + ".254"; }
  std::string cidr() const { return spec.subnet + ".0/24"; }
  // "2 hosts x 1 rank, 1gbit full duplex per host (tbf, burst 256kb)"
  std::string describe() const;
  // The run provenance's "links" object (JSON text).
  std::string links_json() const;
};

// The folder of the state files: $CEDAR_CLUSTER_DIR, else /run/cedar-cluster (a runtime folder:
// cleared at boot, like the namespaces).
std::string cluster_dir();
// Checks a spec's values (ranges and units), throwing std::invalid_argument naming the bad one.
void validate_spec(const ClusterSpec& spec);
// The rate in bits per second ("1gbit" -> 1e9); the burst in bytes ("256kb" -> 262144).
double rate_bits_per_second(const std::string& rate);
int64_t burst_bytes(const std::string& burst);

// The state of the cluster that is up, or nothing when no state file exists in `dir`.
std::optional<ClusterState> read_cluster_state(const std::string& dir);
// Writes the hostfile, the agent and (last, by rename) the state file.
void write_cluster_state(const ClusterState& state);
// Removes the files write_cluster_state writes (absent ones are fine).
void remove_cluster_state(const std::string& dir);
// Removes every host's Open MPI folder (kClusterHostFiles/cedar-h<N>) with what it holds; returns
// the folders removed.
std::vector<std::string> remove_cluster_host_files();

// The argv that starts this executable's `run` on `world_size` ranks placed on the cluster's
// hosts: consecutive ranks fill one host's ranks_per_host slots before the next host (so
// network.ranks_per_node means what it means on a real cluster), shared memory between ranks of
// one host, TCP on the bridge's subnet between hosts.
std::vector<std::string> cluster_launch_command(const ClusterState& state, int world_size,
                                                const std::vector<std::string>& run_args,
                                                const std::string& executable);

}  // namespace cedar
