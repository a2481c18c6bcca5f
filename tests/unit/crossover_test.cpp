// When does compression help: the crossover bandwidth against dense SGD, from hand-computed α–β
// costs (comm/network_model.h: ring allreduce 2(P−1)α + 2(P−1)/P·S·β; allgather (P−1)α +
// (P−1)·s·β), and network profiles read from YAML.
#include "reports/crossover.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "comm/network_model.h"
#include "comm/network_profile_file.h"
#include "config/params.h"

namespace cedar {
namespace {

RunMeasurement measurement(const std::string& name, const std::string& algorithm, double compute,
                           CollectiveMix mix) {
  RunMeasurement m;
  m.name = name;
  m.algorithm = algorithm;
  m.model = "resnet20";
  m.dataset = "cifar10";
  m.suite = "s";
  m.world_size = 4;
  m.steps = 200;
  m.steps_per_epoch = 100;
  m.compute_seconds_per_step = compute;
  m.dense_payload_bytes = 4e6;
  m.collectives = {mix};
  return m;
}

const double kAlpha = 20e-6;
// Dense: one 4 MB allreduce and 0.1 s of compute per step. Sparse: a 40 kB allgather per rank and
// 0.15 s (compression included). 100 steps per epoch at P = 4.
const RunMeasurement kDense = measurement("dense", "dense", 0.10, {"allreduce", 1, 4e6, 0});
const RunMeasurement kSparse = measurement("sparse", "topk", 0.15, {"allgather", 1, 40e3, 0});

TEST(Crossover, BandwidthWhereTheLinesCrossFollowsTheCostModel) {
  std::vector<NetworkProfile> profiles = network_profiles();
  profiles.push_back({"wan", kAlpha, 8.0 / 0.5e9});  // 0.5 Gb/s: below the crossover
  auto points = crossover({kDense, kSparse}, {}, kAlpha, profiles);
  ASSERT_EQ(points.size(), 2u);
  const CrossoverPoint& s = points[1];
  ASSERT_EQ(s.name, "sparse");
  // Per epoch: dense a = 100 (0.1 + 6 α), b = 100 · 6/4 · 4e6; sparse a = 100 (0.15 + 3 α),
  // b = 100 · 3 · 40e3.
  const double ad = 100 * (0.10 + 6 * kAlpha), bd = 100 * 1.5 * 4e6;
  const double a = 100 * (0.15 + 3 * kAlpha), b = 100 * 3 * 40e3;
  EXPECT_NEAR(s.fixed_seconds, a, 1e-9);
  EXPECT_NEAR(s.bytes_per_epoch, b, 1e-3);
  EXPECT_EQ(s.wins, "below");
  EXPECT_NEAR(s.crossover_gbps, (bd - b) / (a - ad) * 8 / 1e9, 1e-9);  // 0.94 Gb/s
  // The sweep: at 1 Gb/s (β = 8 ns per byte).
  const size_t at1 = 2;
  ASSERT_EQ(kCrossoverSweepGbps[at1], 1.0);
  EXPECT_NEAR(s.sweep_seconds[at1], a + b * 8e-9, 1e-9);
  EXPECT_NEAR(points[0].sweep_seconds[at1], ad + bd * 8e-9, 1e-9);
  // Faster than dense only on the 0.5 Gb/s profile: 1 GbE is above the crossover.
  ASSERT_EQ(s.beats_dense_on.size(), profiles.size());
  for (size_t i = 0; i + 1 < profiles.size(); ++i)
    EXPECT_FALSE(s.beats_dense_on[i]) << profiles[i].name;
  EXPECT_TRUE(s.beats_dense_on.back());
  std::string md = render_crossover_markdown(points, kAlpha, profiles);
  EXPECT_NE(md.find("| sparse | 4 (measured) | 15.0 | 12.0 | below 0.94 Gb/s | wan |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| dense | 4 (measured) | 10.0 | 600.0 | – (baseline) |"), std::string::npos)
      << md;
}

TEST(Crossover, AlwaysNeverAndAbove) {
  // Fewer bytes and no more compute: faster at every bandwidth.
  auto always = crossover({kDense, measurement("cheap", "fp16", 0.10, {"allreduce", 1, 2e6, 0})},
                          {}, kAlpha, {});
  EXPECT_EQ(always[1].wins, "always");
  // More bytes and more compute: never.
  auto never =
      crossover({kDense, measurement("worse", "x", 0.2, {"allreduce", 1, 8e6, 0})}, {}, kAlpha, {});
  EXPECT_EQ(never[1].wins, "never");
  // More bytes but less compute: faster only above the crossover.
  auto above =
      crossover({kDense, measurement("lean", "x", 0.05, {"allreduce", 1, 8e6, 0})}, {}, kAlpha, {});
  EXPECT_EQ(above[1].wins, "above");
  EXPECT_NEAR(above[1].crossover_gbps, (100 * 1.5 * 4e6) / (100 * 0.05) * 8 / 1e9, 1e-9);
}

// Every worker count costs the measured epoch's samples (100 steps of 4 ranks: 400 batches), also
// where a global batch is larger than them: 400 / 512 of a step at 512 workers.
TEST(Crossover, EveryWorkerCountCostsTheSameSamples) {
  auto points = crossover({kDense, kSparse}, {16, 512}, kAlpha, {});
  ASSERT_EQ(points.size(), 6u);
  const CrossoverPoint& s512 = points[5];
  ASSERT_EQ(s512.name, "sparse");
  ASSERT_EQ(s512.workers, 512);
  EXPECT_NEAR(s512.fixed_seconds, 400.0 / 512 * (0.15 + 511 * kAlpha), 1e-12);
  EXPECT_NEAR(s512.bytes_per_epoch, 400.0 / 512 * 511 * 40e3, 1e-6);
  // At 16 workers: 25 steps, each an allgather of 15 · 40 kB.
  EXPECT_NEAR(points[4].bytes_per_epoch, 25 * 15 * 40e3, 1e-6);
  // Below a second the table keeps three significant digits: 0.125 s, not 0.1.
  const std::string md = render_crossover_markdown(points, kAlpha, {});
  EXPECT_NE(md.find("| sparse | 512 | 0.125 | 16.0 |"), std::string::npos) << md;
}

// A parameter server's crossover point is at its workers, not its world size (servers included):
// 4 ranks = 1 server + 3 workers.
TEST(Crossover, ParameterServerPointsCountWorkers) {
  RunMeasurement ps = measurement("ps-bsp", "ps", 0.1, {"send", 2, 1e6, 1e6});
  ps.servers = 1;
  ps.gradients_per_epoch = 300;
  ps.push_bytes_per_gradient = 1e6;
  ps.pull_bytes_per_gradient = 1e6;
  auto points = crossover({kDense, ps}, {}, kAlpha, {});
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].workers, 3);
  EXPECT_TRUE(points[1].measured);
  // 300 gradients, 100 rounds of 3; the server's link: 4 messages and 2 MB per gradient (bsp).
  EXPECT_NEAR(points[1].fixed_seconds, 100 * 0.1 + 1200 * kAlpha, 1e-12);
  EXPECT_NEAR(points[1].bytes_per_epoch, 300 * 2e6, 1e-3);
}

// A hierarchical run on nodes of 2 ranks: inside a node (recorded on shm) an allreduce and a
// broadcast of S per step, between the 2 leaders an allgather of q; 0.1 s of compute per step.
RunMeasurement hierarchical_run(double S, double q) {
  RunMeasurement hier = measurement("hier", "hierarchical", 0.1, {"allreduce", 0, 0, 0});
  hier.collectives.clear();
  LevelMix intra{"intra", "shm", 2, {{"allreduce", 1, S, S, 1}, {"broadcast", 1, S / 2, S, 1}}};
  LevelMix inter{"inter", "1gbe", 2, {{"allgather", 1, q, q, 0.5}}};
  hier.levels = {inter, intra};
  return hier;
}

// Hierarchical (2 nodes of 2 ranks: dense allreduce and broadcast of S inside a node on shm, an
// allgather of q between the 2 leaders) against dense SGD on the same hosts. Only the bytes that
// cross the network are swept; the shm traffic is a fixed cost. At P = 2 both runs fit in one
// node, so dense runs on shm too, with nothing on the network.
TEST(Crossover, HierarchicalAndDenseAreCostedOnTheSameHosts) {
  const double S = 4e6, q = 1e5;
  const RunMeasurement hier = hierarchical_run(S, q);
  const NetworkProfile& shm = find_network_profile("shm");
  auto points = crossover({kDense, hier}, {2}, kAlpha, {find_network_profile("1gbe")});
  ASSERT_EQ(points.size(), 4u);
  const CrossoverPoint &h4 = points[2], &h2 = points[3];
  ASSERT_EQ(h4.workers, 4);
  ASSERT_EQ(h2.workers, 2);
  // P = 4, 100 steps: on shm per step 2 α + S β (allreduce of 2) and 1 α + S β (broadcast of
  // 2); on the network one allgather between 2 leaders: 1 α and q bytes.
  const double shm4 = 100 * (3 * shm.alpha + 2 * S * shm.beta);
  EXPECT_NEAR(h4.bytes_per_epoch, 100 * q, 1e-6);
  EXPECT_NEAR(h4.fixed_seconds, 100 * 0.1 + shm4 + 100 * kAlpha, 1e-12);
  // Dense at P = 4 on 2 nodes: its ring crosses each node's link, so the network bounds it.
  const double ad4 = 100 * (0.1 + 6 * kAlpha), bd4 = 100 * 1.5 * 4e6;
  // Fewer network bytes, more fixed time (shm's 80 ms against 10 ms of dense's latencies).
  const double a4 = 100 * 0.1 + shm4 + 100 * kAlpha, b4 = 100 * q;
  EXPECT_EQ(h4.wins, "below");
  EXPECT_NEAR(h4.crossover_gbps, (bd4 - b4) / (a4 - ad4) * 8 / 1e9, 1e-9);
  EXPECT_NEAR(points[0].fixed_seconds, ad4, 1e-12);
  EXPECT_NEAR(points[0].bytes_per_epoch, bd4, 1e-3);
  // P = 2: one node. The hierarchical run has one leader (no network traffic); dense's allreduce
  // of 4 MB runs on shm: 200 steps of 2 α + 4e6 β there, nothing swept.
  EXPECT_NEAR(h2.bytes_per_epoch, 0, 1e-9);
  const double dense2 = 200 * (0.1 + 2 * shm.alpha + 4e6 * shm.beta);
  const double hier2 = 200 * (0.1 + 3 * shm.alpha + 2 * S * shm.beta);
  EXPECT_NEAR(h2.fixed_seconds, hier2, 1e-12);
  EXPECT_EQ(h2.wins, "never");  // same network bytes (none), more shm time than dense's
  // On 1 GbE too: dense is costed on the node's shm (dense2), not on 1 GbE, so it stays faster.
  ASSERT_LT(dense2, hier2);
  EXPECT_NEAR(h2.profile_seconds.at(0), hier2, 1e-12);
  EXPECT_FALSE(h2.beats_dense_on.at(0));
}

// The links inside a host given (a calibration of one host's ranks): the hierarchical run's level
// inside a node is costed on them, not on the shm profile the run recorded, and so is the part of
// dense SGD's traffic that stays on a host.
TEST(Crossover, TheLinksInsideAHostCanBeGiven) {
  const double S = 4e6, q = 1e5;
  const RunMeasurement hier = hierarchical_run(S, q);
  const NetworkProfile host{"host", 40e-6, 2e-9};  // far slower than shm's constants
  auto points = crossover({kDense, hier}, {2}, kAlpha, {}, &host);
  ASSERT_EQ(points.size(), 4u);
  const CrossoverPoint &h4 = points[2], &h2 = points[3];
  // P = 4, 100 steps: per step 2 α + S β and 1 α + S β on the given links.
  const double host4 = 100 * (3 * host.alpha + 2 * S * host.beta);
  const double a4 = 100 * 0.1 + host4 + 100 * kAlpha, b4 = 100 * q;
  EXPECT_NEAR(h4.fixed_seconds, a4, 1e-12);
  const double ad4 = 100 * (0.1 + 6 * kAlpha), bd4 = 100 * 1.5 * 4e6;
  EXPECT_EQ(h4.wins, "below");
  EXPECT_NEAR(h4.crossover_gbps, (bd4 - b4) / (a4 - ad4) * 8 / 1e9, 1e-9);
  // P = 2, one node: 200 steps of the level on the given links.
  EXPECT_NEAR(h2.fixed_seconds, 200 * (0.1 + 3 * host.alpha + 2 * S * host.beta), 1e-12);
  // Without them, the recorded shm as before.
  const NetworkProfile& shm = find_network_profile("shm");
  EXPECT_NEAR(crossover({kDense, hier}, {}, kAlpha, {})[1].fixed_seconds,
              100 * 0.1 + 100 * (3 * shm.alpha + 2 * S * shm.beta) + 100 * kAlpha, 1e-12);
}

// A fixed-time difference smaller than the seeds' spread of compute time is flagged: the verdict
// then rests on noise. Two seeds each; compute per step 0.10 / 0.12 s for dense (sd 0.0141 s).
TEST(Crossover, DifferencesWithinTheSeedSpreadAreFlagged) {
  auto seeded = [](RunMeasurement m, int64_t seed, double compute) {
    m.seed = seed;
    m.compute_seconds_per_step = compute;
    return m;
  };
  const RunMeasurement cheap = measurement("cheap", "topk", 0, {"allgather", 1, 40e3, 0});
  const RunMeasurement slow = measurement("slow", "qsgd", 0, {"allgather", 1, 40e3, 0});
  auto points =
      crossover({seeded(kDense, 1, 0.10), seeded(kDense, 2, 0.12), seeded(cheap, 1, 0.108),
                 seeded(cheap, 2, 0.112), seeded(slow, 1, 0.19), seeded(slow, 2, 0.21)},
                {}, kAlpha, {});
  ASSERT_EQ(points.size(), 3u);
  // cheap: mean compute 0.11 s as dense's; 100 steps: |Δa| = 100 · 3α = 6 ms, spread 100 ·
  // hypot(0.0141, 0.0028) = 1.4 s.
  EXPECT_TRUE(points[1].within_seed_spread);
  // slow: 0.2 s against 0.11 s, 9 s per epoch apart: a real difference.
  EXPECT_FALSE(points[2].within_seed_spread);
  const std::string md = render_crossover_markdown(points, kAlpha, {});
  EXPECT_NE(md.find("| cheap | 4 (measured) | 11.0 | 12.0 | at every bandwidth (compute within the "
                    "seed spread) |"),
            std::string::npos)
      << md;
  // One seed each: no spread known, nothing flagged.
  EXPECT_FALSE(crossover({kDense, kSparse}, {}, kAlpha, {})[1].within_seed_spread);
}

// Compute per step comes from the seeds timed on a quiet host (other processes under
// kQuietMachineShare of its CPU) where an arm has any: a seed timed beside a compiler must not
// make a method look slower or faster. Dense: seeds 1 and 3 quiet (0.10 and 0.12 s per step), seed
// 2 loaded (0.30 s); the sparse arm has no quiet seed and keeps all of its own (0.15 and 0.17 s).
TEST(Crossover, ComputeComesFromTheSeedsTimedOnAQuietHost) {
  auto seeded = [](RunMeasurement m, int64_t seed, double compute, double load) {
    m.seed = seed;
    m.compute_seconds_per_step = compute;
    m.other_load = load;
    return m;
  };
  auto points = crossover(
      {seeded(kDense, 1, 0.10, 0.01), seeded(kDense, 2, 0.30, 0.45), seeded(kDense, 3, 0.12, 0.02),
       seeded(kSparse, 1, 0.15, 0.40), seeded(kSparse, 2, 0.17, 0.60)},
      {}, kAlpha, {});
  ASSERT_EQ(points.size(), 2u);
  // Dense: 100 steps of (0.11 + 6 α); with the loaded seed it would be 0.1733 s per step.
  EXPECT_NEAR(points[0].fixed_seconds, 100 * (0.11 + 6 * kAlpha), 1e-9);
  EXPECT_EQ(points[0].seeds, 3);
  EXPECT_EQ(points[0].timed_seeds, 2);
  EXPECT_FALSE(points[0].timed_beside_other_work);
  // Sparse: no quiet seed, so both (0.16 s), and the table says so.
  EXPECT_NEAR(points[1].fixed_seconds, 100 * (0.16 + 3 * kAlpha), 1e-9);
  EXPECT_EQ(points[1].timed_seeds, 2);
  EXPECT_TRUE(points[1].timed_beside_other_work);
  const std::string md = render_crossover_markdown(points, kAlpha, {});
  EXPECT_NE(md.find("Compute per step is the mean over the seeds timed on a quiet host (other "
                    "processes used at most 5% of its CPU): dense (2 of 3); no seed was quiet, "
                    "so all of them, timed beside other work: sparse (2 of 2)."),
            std::string::npos)
      << md;
  // A run whose load was not recorded (written before it was measured) is not known to be quiet:
  // beside a loaded seed, both count, and the arm is flagged.
  auto unrecorded =
      crossover({seeded(kDense, 1, 0.10, -1), seeded(kDense, 2, 0.30, 0.45)}, {}, kAlpha, {});
  EXPECT_NEAR(unrecorded[0].fixed_seconds, 100 * (0.20 + 6 * kAlpha), 1e-9);
  EXPECT_TRUE(unrecorded[0].timed_beside_other_work);
  // No load recorded anywhere: nothing to say.
  EXPECT_EQ(render_crossover_markdown(crossover({kDense, kSparse}, {}, kAlpha, {}), kAlpha, {})
                .find("Compute per step"),
            std::string::npos);
}

std::string write(const std::string& name, const std::string& text) {
  auto p = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(p) << text;
  return p.string();
}

TEST(NetworkProfiles, ReadFromYamlWithBetaOrBandwidth) {
  auto path = write("nets.yaml",
                    "networks:\n  - {name: wan, alpha: 1.0e-3, bandwidth_gbps: 0.1}\n"
                    "  - {name: nvlink, alpha: 2.0e-6, beta: 3.0e-12}\n");
  auto p = load_network_profiles(path);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, "wan");
  EXPECT_DOUBLE_EQ(p[0].alpha, 1e-3);
  EXPECT_DOUBLE_EQ(p[0].beta, 8.0 / 0.1e9);
  EXPECT_DOUBLE_EQ(p[1].beta, 3e-12);
}

TEST(NetworkProfiles, BadEntriesNameFileLineAndKey) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    auto path = write("badnets.yaml", text);
    try {
      load_network_profiles(path);
      FAIL() << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ":"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("networks:\n  - {name: a, alpha: 1e-6}\n", "exactly one of beta and bandwidth_gbps");
  expect_error("networks:\n  - {name: a, alpha: 1e-6, beta: 1e-9, bandwidth_gbps: 1}\n",
               "exactly one of");
  expect_error("networks:\n  - {name: 1gbe, alpha: 1e-6, beta: 1e-9}\n", "already a profile");
  expect_error("networks:\n  - {name: a, alpha: -1, beta: 1e-9}\n", "alpha");
  expect_error("networks:\n  - {name: a, alpha: 1e-6, bta: 1e-9}\n", "bta");
  expect_error("networks: {name: a}\n", "expected a list");
  EXPECT_THROW(load_network_profiles("/nonexistent/nets.yaml"), ConfigError);
}

}  // namespace
}  // namespace cedar
