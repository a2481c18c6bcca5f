// The virtual cluster's state (runner/suite/cluster_state.h) and the launch it makes: tc units,
// the checks on a spec, the state files written and read back, the agent entering only Cedar's
// namespaces, the mpirun command placing consecutive ranks on one host, and which runs fit
// (runner/suite/launcher.h); run_captured (platform/process.h). Nothing here needs root.
#include "runner/suite/cluster_state.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/params.h"
#include "platform/process.h"
#include "runner/suite/launcher.h"

namespace cedar {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The value after `option` in argv ("" when absent).
std::string after(const std::vector<std::string>& argv, const std::string& option,
                  const std::string& name = "") {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == option && (name.empty() || argv[i + 1] == name))
      return name.empty() ? argv[i + 1] : (i + 2 < argv.size() ? argv[i + 2] : "");
  return "";
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/cedar-cluster-test.XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { run_process({"rm", "-rf", path}); }
};

TEST(ClusterState, TcUnits) {
  EXPECT_DOUBLE_EQ(rate_bits_per_second("1gbit"), 1e9);
  EXPECT_DOUBLE_EQ(rate_bits_per_second("100mbit"), 1e8);
  EXPECT_DOUBLE_EQ(rate_bits_per_second("2.5gbit"), 2.5e9);
  EXPECT_EQ(burst_bytes("256kb"), 262144);
  EXPECT_EQ(burst_bytes("1mb"), 1048576);
  EXPECT_EQ(burst_bytes("1600b"), 1600);
  EXPECT_THROW(rate_bits_per_second("1gbps"), std::invalid_argument);
  EXPECT_THROW(rate_bits_per_second("fast"), std::invalid_argument);
  EXPECT_THROW(burst_bytes("256"), std::invalid_argument);
}

TEST(ClusterState, SpecChecksNameTheBadValue) {
  ClusterSpec ok;
  EXPECT_NO_THROW(validate_spec(ok));
  auto message = [](ClusterSpec s) {
    try {
      validate_spec(s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  ClusterSpec s = ok;
  s.hosts = 0;
  EXPECT_NE(message(s).find("--hosts 0"), std::string::npos);
  s = ok;
  s.rate = "1gb";
  EXPECT_NE(message(s).find("rate '1gb'"), std::string::npos);
  s = ok;
  s.burst = "100b";  // less than one frame: tbf would pass nothing
  EXPECT_NE(message(s).find("burst '100b'"), std::string::npos);
  s = ok;
  s.subnet = "192.168.1";  // only 10.x.y: a private range that routes nowhere here
  EXPECT_NE(message(s).find("subnet"), std::string::npos);
  s = ok;
  s.subnet = "10.300.0";
  EXPECT_NE(message(s).find("subnet"), std::string::npos);
}

TEST(ClusterState, WrittenStateReadsBack) {
  TempDir dir;
  EXPECT_FALSE(read_cluster_state(dir.path).has_value());
  ClusterState s;
  s.dir = dir.path;
  s.spec.hosts = 3;
  s.spec.ranks_per_host = 2;
  s.spec.rate = "100mbit";
  s.spec.burst = "64kb";
  write_cluster_state(s);
  const auto back = read_cluster_state(dir.path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->spec.hosts, 3);
  EXPECT_EQ(back->spec.ranks_per_host, 2);
  EXPECT_EQ(back->spec.rate, "100mbit");
  EXPECT_EQ(back->spec.burst, "64kb");
  EXPECT_EQ(back->qdisc, "tbf");
  EXPECT_EQ(slurp(s.hostfile()), "cedar-h0 slots=2\ncedar-h1 slots=2\ncedar-h2 slots=2\n");
  EXPECT_EQ(back->describe(), "3 hosts x 2 ranks, 100mbit full duplex per host (tbf, burst 64kb)");
  EXPECT_EQ(access(s.agent().c_str(), X_OK), 0);
  remove_cluster_state(dir.path);
  EXPECT_FALSE(read_cluster_state(dir.path).has_value());
}

TEST(ClusterState, CorruptStateSaysHowToRemoveIt) {
  TempDir dir;
  std::ofstream(dir.path + "/cluster.yaml") << "hosts: many\n";
  try {
    read_cluster_state(dir.path);
    FAIL() << "a corrupt state was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cedar cluster down"), std::string::npos) << e.what();
  }
}

TEST(ClusterState, AgentEntersOnlyCedarsNamespaces) {
  TempDir dir;
  ClusterState s;
  s.dir = dir.path;
  write_cluster_state(s);
  std::string out;
  EXPECT_EQ(run_captured({s.agent(), "localhost", "-x", "true"}, &out), 1);
  EXPECT_NE(out.find("not a host of the virtual cluster"), std::string::npos) << out;
}

TEST(ClusterState, LaunchFillsEachHostThenTheNext) {
  ClusterState s;
  s.dir = "/run/x";
  s.spec.hosts = 2;
  s.spec.ranks_per_host = 2;
  const auto argv = cluster_launch_command(s, 4, {"exp.yaml", "--db", "r.db"}, "/bin/cedar");
  EXPECT_EQ(argv[0], "mpirun");
  EXPECT_EQ(after(argv, "--hostfile"), "/run/x/hostfile");
  EXPECT_EQ(after(argv, "--map-by"), "slot");  // consecutive ranks share a host
  EXPECT_EQ(after(argv, "-np"), "4");
  EXPECT_EQ(after(argv, "--mca", "plm_rsh_agent"), "/run/x/rsh-agent");
  EXPECT_EQ(after(argv, "--mca", "btl"), "tcp,vader,self");
  EXPECT_EQ(after(argv, "--mca", "btl_tcp_if_include"), "10.213.0.0/24");
  EXPECT_EQ(after(argv, "--mca", "oob_tcp_if_include"), "10.213.0.0/24");
  EXPECT_EQ(after(argv, "-x"), "CEDAR_CLUSTER_LINKS");
  EXPECT_EQ(after(argv, "--mca", "oob_tcp_keepalive_time"), "3");    // a dead host's daemon is
  EXPECT_EQ(after(argv, "--mca", "oob_tcp_keepalive_probes"), "2");  // given up in seconds
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--oversubscribe"), 0);
  const std::vector<std::string> tail(argv.end() - 5, argv.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"/bin/cedar", "run", "exp.yaml", "--db", "r.db"}));
}

TEST(ClusterState, LinksJsonHoldsHostsRateBurstQdisc) {
  ClusterState s;
  s.spec.hosts = 4;
  s.spec.rate = "100mbit";
  EXPECT_EQ(s.links_json(),
            "{\"cluster\":\"virtual\",\"hosts\":4,\"ranks_per_host\":1,\"rate\":\"100mbit\","
            "\"burst\":\"256kb\",\"latency\":\"100ms\",\"qdisc\":\"tbf\",\"subnet\":\"10.213.0.0/"
            "24\"}");
}

TEST(ClusterState, RunsMustFitTheCluster) {
  TempDir dir;
  setenv("CEDAR_CLUSTER_DIR", dir.path.c_str(), 1);
  EXPECT_FALSE(cluster_for_run("none", 64, 0, "a").has_value());
  EXPECT_THROW(cluster_for_run("virtual", 2, 0, "a"), ConfigError);  // none up
  ClusterState s;
  s.dir = dir.path;
  s.spec.hosts = 2;
  s.spec.ranks_per_host = 2;
  write_cluster_state(s);
  EXPECT_TRUE(cluster_for_run("virtual", 4, 0, "a").has_value());
  EXPECT_TRUE(cluster_for_run("virtual", 3, 2, "a").has_value());
  EXPECT_THROW(cluster_for_run("virtual", 5, 0, "a"), ConfigError);
  EXPECT_THROW(cluster_for_run("virtual", 4, 1, "a"), ConfigError);
  unsetenv("CEDAR_CLUSTER_DIR");
}

TEST(RunCaptured, OutputAndStatus) {
  std::string out;
  EXPECT_EQ(run_captured({"sh", "-c", "echo out; echo err >&2; exit 5"}, &out), 5);
  EXPECT_EQ(out, "out\nerr\n");
  EXPECT_EQ(run_captured({"cedar-no-such-program"}, &out), 127);
  EXPECT_NE(out.find("cedar-no-such-program"), std::string::npos);
}

}  // namespace
}  // namespace cedar
