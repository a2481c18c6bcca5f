// `cedar project` and the crossover on a calibrated profile: each collective is costed with its
// own fit at the nearest P measured (oracles written out here), a collective without one with
// the profile's default, and the tables say which constants are measured and which assumed.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/network_model.h"
#include "reports/crossover.h"
#include "reports/projection.h"

namespace cedar {
namespace {

RunMeasurement measured_run() {
  RunMeasurement m;
  m.name = "sparse";
  m.algorithm = "topk";
  m.model = "resnet20";
  m.dataset = "cifar10";
  m.world_size = 4;
  m.steps = 100;
  m.steps_per_epoch = 100;
  m.compute_seconds_per_step = 0.1;
  m.dense_payload_bytes = 4e6;
  // Per step: one 4 MB allreduce, two allgathers of 40 kB per rank in all, one barrier.
  m.collectives = {{"allreduce", 1, 4e6, 0}, {"allgather", 2, 40e3, 0}, {"barrier", 1, 0, 0}};
  return m;
}

NetworkProfile calibrated() {
  NetworkProfile p{"vc", 100e-6, 10e-9};  // the default: barrier's
  p.measured_on = "two namespaces";
  p.collectives["allreduce"] = {{2, {40e-6, 8e-9}}, {8, {70e-6, 9e-9}}};
  p.collectives["allgather"] = {{4, {30e-6, 7e-9}}};
  return p;
}

TEST(CalibratedProjection, AFitWithSizeBandsCostsEachCollectiveOnItsMeanMessage) {
  const RunMeasurement m = measured_run();
  NetworkProfile net = calibrated();
  // allreduce at P = 2: below 1 MB one fit, from 1 MB another; allgather at P = 4: from 16 kB.
  net.size_bands["allreduce"][2] = {{0, {1e-6, 1e-9}}, {1e6, {90e-6, 12e-9}}};
  net.size_bands["allgather"][4] = {{0, {1e-6, 1e-9}}, {16e3, {50e-6, 5e-9}}};
  const int p = 2;
  const double steps = 100.0 * 4 / p;
  // The 4 MB allreduce takes the band from 1 MB; the allgather's calls carry 20 kB each
  // (40 kB over 2 calls), in the band from 16 kB.
  const double allreduce = 2 * (p - 1) * 90e-6 + 2.0 * (p - 1) / p * 4e6 * 12e-9;
  const double allgather = 2 * (p - 1) * 50e-6 + (p - 1) * 40e3 * 5e-9;
  const double barrier = (p - 1) * 100e-6;
  const double expected = steps * (allreduce + allgather + barrier);
  EXPECT_NEAR(project_point(m, p, net).comm_seconds, expected, 1e-12 * expected);
  EXPECT_EQ(mean_message_bytes({"allgather", 2, 40e3, 0}), 20e3);
  EXPECT_EQ(mean_message_bytes({"broadcast", 4, 1e3, 8e3}), 2e3);  // the root's bytes
  EXPECT_EQ(mean_message_bytes({"allreduce", 0, 0, 0}), 0);
}

TEST(CalibratedProjection, EachCollectiveIsCostedWithItsOwnFit) {
  const RunMeasurement m = measured_run();
  const NetworkProfile net = calibrated();
  for (int p : {2, 8}) {
    const double steps = 100.0 * 4 / p;
    // allreduce at P = 2 or 8: that P's fit; allgather: the P = 4 fit (the only one); barrier:
    // (P-1) latencies at the default α.
    const double ar_a = p == 2 ? 40e-6 : 70e-6, ar_b = p == 2 ? 8e-9 : 9e-9;
    const double allreduce = 2 * (p - 1) * ar_a + 2.0 * (p - 1) / p * 4e6 * ar_b;
    // (A mix's payload is per step, over its calls: the two calls add latencies, not bytes.)
    const double allgather = 2 * (p - 1) * 30e-6 + (p - 1) * 40e3 * 7e-9;
    const double barrier = (p - 1) * 100e-6;
    const double expected = steps * (allreduce + allgather + barrier);
    const ProjectionPoint pt = project_point(m, p, net);
    EXPECT_NEAR(pt.comm_seconds, expected, 1e-12 * expected) << "P=" << p;
    EXPECT_NEAR(pt.total_seconds, expected + steps * 0.1, 1e-12 * expected) << "P=" << p;
    // The same terms on the default α and β alone differ: the fits are really used.
    const double nominal =
        NetworkProfile{"d", 100e-6, 10e-9}.alpha * pt.net_latency_steps + 10e-9 * pt.net_bus_bytes;
    EXPECT_GT(std::fabs(nominal - expected), 1e-3 * expected);
  }
}

TEST(CalibratedProjection, NominalProfilesCostAsBefore) {
  const RunMeasurement m = measured_run();
  const NetworkProfile& net = find_network_profile("1gbe");
  const ProjectionPoint pt = project_point(m, 8, net);
  EXPECT_DOUBLE_EQ(pt.comm_seconds, net.alpha * pt.net_latency_steps + net.beta * pt.net_bus_bytes);
}

TEST(CalibratedProjection, TablesLabelMeasuredAndAssumedConstants) {
  RunMeasurement m = measured_run();
  const auto projections = project_runs({m}, {m}, {8}, calibrated());
  ASSERT_EQ(projections.size(), 1u);
  const std::string md = render_projection_markdown(projections);
  EXPECT_NE(md.find("calibrated (measured on two namespaces)"), std::string::npos) << md;
  EXPECT_NE(md.find("- allreduce: P = 2: 40 µs, 1 Gb/s; P = 8: 70 µs"), std::string::npos) << md;
  const std::string nominal =
      render_projection_markdown(project_runs({m}, {m}, {8}, find_network_profile("10gbe")));
  EXPECT_NE(nominal.find("nominal (assumed)"), std::string::npos) << nominal;

  std::vector<NetworkProfile> profiles = {find_network_profile("1gbe"), calibrated()};
  const auto points = crossover({m}, {8}, 20e-6, profiles);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[1].profile_seconds[1], project_point(m, 8, calibrated()).total_seconds);
  const std::string cross = render_crossover_markdown(points, 20e-6, profiles);
  EXPECT_NE(cross.find("1gbe (α 50 µs, 1 Gb/s, nominal (assumed))"), std::string::npos) << cross;
  EXPECT_NE(cross.find("vc (α 100 µs, 0.8 Gb/s, calibrated (measured on two namespaces)"),
            std::string::npos)
      << cross;
}

}  // namespace
}  // namespace cedar
