// Projection to more workers: the per-step collective mix read back from comm_totals, the α–β
// cost on P ranks (allreduce bytes bounded, allgather bytes linear in P), steps per epoch under a
// fixed per-rank batch, and the speed-ups.
#include "reports/projection.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "comm/network_model.h"
#include "tests/unit/results_fixture.h"

namespace cedar {
namespace {

using fixture::CollectiveSpec;
using fixture::RunSpec;

constexpr double kDenseBytes = 4e6;   // 1M fp32 gradients
constexpr double kSparseBytes = 8e4;  // 1% of them as (int32 index, fp32 value)

std::string fresh_db(const std::string& name) {
  std::string path = ::testing::TempDir() + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

RunSpec spec(const std::string& suite, const std::string& name, const std::string& algorithm,
             CollectiveSpec c, int64_t world = 4, int64_t seed = 1, double compute = 0.05) {
  RunSpec s;
  s.suite = suite;
  s.name = name;
  s.algorithm = algorithm;
  s.world_size = world;
  s.seed = seed;
  s.steps_per_epoch = 100;
  s.compute_seconds = compute;
  s.dense_bytes = int64_t(kDenseBytes);
  s.collectives = {c};
  return s;
}

class ProjectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = fresh_db("projection_test.db");
    ResultStore store(path_);
    const int64_t d = int64_t(kDenseBytes), k = int64_t(kSparseBytes);
    fixture::write_run(store, spec("scale", "dense", "dense", {"allreduce", 1, {d, d, d, d}}));
    fixture::write_run(store, spec("scale", "topk", "topk", {"allgather", 1, {k, k, k, k}}));
    // LAG-like: uneven contributions (each with its 8-byte count).
    fixture::write_run(
        store, spec("scale", "lag", "lag", {"allgatherv", 1, {10008, 20008, 30008, 40008}}));
    fixture::write_run(store,
                       spec("seeds", "fp16", "fp16", {"allgather", 1, {800, 800}}, 2, 1, 0.04));
    fixture::write_run(store,
                       spec("seeds", "fp16", "fp16", {"allgather", 1, {800, 800}}, 2, 2, 0.06));
    solo_id_ = fixture::write_run(store, spec("solo", "dense", "dense", {"allreduce", 1, {0}}, 1));
  }
  static const RunMeasurement& find(const std::vector<RunMeasurement>& ms,
                                    const std::string& name) {
    for (const auto& m : ms)
      if (m.name == name) return m;
    throw std::runtime_error("no run " + name);
  }
  static std::string path_;
  static int64_t solo_id_;
};
std::string ProjectionTest::path_;
int64_t ProjectionTest::solo_id_ = 0;

TEST_F(ProjectionTest, PerStepMixComesFromCommTotalsAndReproducesTheSteps) {
  auto ms = load_measurements(path_, "scale");
  ASSERT_EQ(ms.size(), 3u);
  const auto& dense = find(ms, "dense");
  EXPECT_EQ(dense.steps, 200);
  EXPECT_EQ(dense.steps_per_epoch, 100);
  EXPECT_NEAR(dense.compute_seconds_per_step, 0.05, 1e-12);
  ASSERT_EQ(dense.collectives.size(), 1u);
  EXPECT_EQ(dense.collectives[0].op, "allreduce");
  EXPECT_DOUBLE_EQ(dense.collectives[0].calls, 1.0);
  EXPECT_DOUBLE_EQ(dense.collectives[0].payload_bytes, kDenseBytes);
  // At the measured 4 ranks the mix gives back what the metering recorded per step.
  for (const auto& m : ms) {
    CollectiveCost c = step_cost(m, 4);
    EXPECT_DOUBLE_EQ(c.latency_steps, m.recorded_latency_steps) << m.name;
    EXPECT_DOUBLE_EQ(c.bus_bytes, m.recorded_bus_bytes) << m.name;
  }
  EXPECT_DOUBLE_EQ(find(ms, "dense").recorded_bus_bytes, 6e6);            // 2·3/4 · 4 MB
  EXPECT_DOUBLE_EQ(find(ms, "lag").collectives[0].payload_bytes, 25008);  // mean over ranks
  EXPECT_DOUBLE_EQ(find(ms, "lag").recorded_bus_bytes, 75024);            // 3/4 · (100000 + 4·8)
}

TEST_F(ProjectionTest, AllreduceBytesStayBoundedWhileAllgatherBytesGrowLinearly) {
  auto ms = load_measurements(path_, "scale");
  const CollectiveMix& ar = find(ms, "dense").collectives[0];
  const CollectiveMix& ag = find(ms, "topk").collectives[0];
  const CollectiveMix& agv = find(ms, "lag").collectives[0];
  for (int p : {2, 8, 64, 256, 1024}) {
    CollectiveCost a = collective_cost(ar, p), g = collective_cost(ag, p),
                   v = collective_cost(agv, p);
    EXPECT_NEAR(a.bus_bytes, 2.0 * (p - 1) / p * kDenseBytes, 1e-6) << p;
    EXPECT_LT(a.bus_bytes, 2 * kDenseBytes);
    EXPECT_NEAR(g.bus_bytes, (p - 1) * kSparseBytes, 1e-6) << p;
    EXPECT_NEAR(v.bus_bytes, (p - 1) * 25008.0, 1e-6) << p;
    EXPECT_DOUBLE_EQ(a.latency_steps, 2.0 * (p - 1));
    EXPECT_DOUBLE_EQ(g.latency_steps, p - 1.0);
    EXPECT_DOUBLE_EQ(v.latency_steps, 2.0 * (p - 1));  // counts, then data
  }
  EXPECT_DOUBLE_EQ(collective_cost(ar, 1).bus_bytes, 0);
  EXPECT_DOUBLE_EQ(collective_cost(ag, 1).latency_steps, 0);
}

TEST_F(ProjectionTest, EpochTimeFollowsTheAlphaBetaFormula) {
  const NetworkProfile& net = find_network_profile("10gbe");
  auto ms = load_measurements(path_, "scale");
  auto ps = project_runs(ms, ms, {8, 64, 256, 1024}, net);
  ASSERT_EQ(ps.size(), 3u);
  const auto& dense = ps[0];
  const auto& topk = ps[1];
  ASSERT_EQ(dense.basis.name, "dense");
  ASSERT_EQ(topk.basis.name, "topk");
  ASSERT_EQ(dense.points.size(), 5u);
  EXPECT_TRUE(dense.points[0].measured);
  EXPECT_EQ(dense.points[0].workers, 4);
  const int workers[] = {4, 8, 64, 256, 1024};
  const int64_t steps[] = {100, 50, 6, 1, 0};  // floor(100 · 4 / P)
  auto dense_epoch = [&](int p, int64_t spe) {
    return spe * (0.05 + 2 * (p - 1) * net.alpha + 2.0 * (p - 1) / p * kDenseBytes * net.beta);
  };
  auto topk_epoch = [&](int p, int64_t spe) {
    return spe * (0.05 + (p - 1) * net.alpha + (p - 1) * kSparseBytes * net.beta);
  };
  for (int i = 0; i < 5; ++i) {
    const int p = workers[i];
    const auto& d = dense.points[static_cast<size_t>(i)];
    const auto& t = topk.points[static_cast<size_t>(i)];
    EXPECT_EQ(d.workers, p);
    EXPECT_EQ(d.steps_per_epoch, steps[i]) << p;
    EXPECT_NEAR(d.compute_seconds, 0.05 * double(steps[i]), 1e-12);
    EXPECT_NEAR(d.total_seconds, dense_epoch(p, steps[i]), 1e-9) << p;
    EXPECT_NEAR(t.total_seconds, topk_epoch(p, steps[i]), 1e-9) << p;
    EXPECT_NEAR(d.allreduce_mb, 2.0 * (p - 1) / p * kDenseBytes / 1e6, 1e-9);
    EXPECT_NEAR(t.allgather_mb, (p - 1) * kSparseBytes / 1e6, 1e-9);
    if (steps[i] == 0) {
      EXPECT_EQ(d.speedup_vs_measured, 0);  // not a whole global batch per epoch: no speed-up
      continue;
    }
    EXPECT_NEAR(d.speedup_vs_measured, dense_epoch(4, 100) / dense_epoch(p, steps[i]), 1e-9);
    EXPECT_NEAR(d.speedup_vs_dense, 1.0, 1e-12);
    EXPECT_NEAR(t.speedup_vs_dense, dense_epoch(p, steps[i]) / topk_epoch(p, steps[i]), 1e-9);
  }
  EXPECT_EQ(topk.dense_name, "dense");
  // 1% top-k beats the dense allreduce on 8 ranks and loses to it on 256.
  EXPECT_GT(topk.points[1].speedup_vs_dense, 1.0);
  EXPECT_LT(topk.points[3].speedup_vs_dense, 1.0);
}

// Payload compression is the dense payload over the run's, whatever P; the wire ratio is dense
// SGD's ring-allreduce bus bytes over the run's bus bytes at P: for a 1% allgather
// 2(P-1)/P · 4 MB / ((P-1) · 80 kB) = 100 / P, so the 50x payload edge is 12.5x at 8 ranks and
// below 1 past 100 ranks.
TEST_F(ProjectionTest, PayloadCompressionAndWireRatioAtEachWorkerCount) {
  auto ms = load_measurements(path_, "scale");
  auto ps = project_runs(ms, ms, {8, 256}, find_network_profile("10gbe"));
  const auto& dense = ps[0];
  const auto& topk = ps[1];
  ASSERT_EQ(topk.basis.name, "topk");
  for (size_t i = 0; i < topk.points.size(); ++i) {
    const double p = topk.points[i].workers;
    EXPECT_NEAR(topk.points[i].payload_compression, kDenseBytes / kSparseBytes, 1e-9);
    EXPECT_NEAR(topk.points[i].wire_ratio, 100.0 / p, 1e-9) << p;
    EXPECT_NEAR(dense.points[i].payload_compression, 1.0, 1e-12);
    EXPECT_NEAR(dense.points[i].wire_ratio, 1.0, 1e-12);
  }
  const std::string md = render_projection_markdown(ps);
  EXPECT_NE(md.find("payload compression | wire ratio"), std::string::npos) << md;
  EXPECT_NE(render_projection_csv(ps).find(",payload_compression,wire_ratio\n"), std::string::npos);
}

TEST_F(ProjectionTest, SeedsAreAveragedAndWithoutDenseThereIsNoRatio) {
  auto ms = load_measurements(path_, "seeds");
  ASSERT_EQ(ms.size(), 2u);
  auto ps = project_runs(ms, ms, {4}, find_network_profile("1gbe"));
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].basis.seeds, 2);
  EXPECT_NEAR(ps[0].basis.compute_seconds_per_step, 0.05, 1e-12);
  EXPECT_TRUE(ps[0].dense_name.empty());
  for (const auto& pt : ps[0].points) EXPECT_EQ(pt.speedup_vs_dense, 0);
  EXPECT_EQ(ps[0].points[1].steps_per_epoch, 50);  // 100 · 2 / 4
}

TEST_F(ProjectionTest, OneRankRunsAreRefusedWithTheReason) {
  auto ms = load_measurements(path_, "solo");
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_NE(ms[0].unusable.find("1 rank"), std::string::npos) << ms[0].unusable;
  EXPECT_TRUE(project_runs(ms, ms, {8}, find_network_profile("10gbe")).empty());
  auto one = load_measurements(path_, "", solo_id_);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].id, solo_id_);
  EXPECT_EQ(one[0].suite, "solo");
}

// Gossip's point-to-point messages: one latency term per message and the bytes sent, at any P
// (on one rank nothing is sent); a receive is its sender's.
TEST(ProjectionCost, PointToPointMessagesCostTheirSenderOneAlphaAndTheirBytes) {
  const CollectiveMix ring{"sendrecv", 2, 2 * 246824.0, 2 * 246824.0};
  for (int p : {2, 4, 64, 1024}) {
    const CollectiveCost c = collective_cost(ring, p);
    EXPECT_DOUBLE_EQ(c.latency_steps, 2) << p;
    EXPECT_DOUBLE_EQ(c.bus_bytes, 493648) << p;
  }
  EXPECT_DOUBLE_EQ(collective_cost(ring, 1).bus_bytes, 0);
  const CollectiveCost r = collective_cost(CollectiveMix{"recv", 3, 0, 0}, 8);
  EXPECT_DOUBLE_EQ(r.latency_steps, 0);
  EXPECT_DOUBLE_EQ(r.bus_bytes, 0);
  EXPECT_DOUBLE_EQ(collective_cost(CollectiveMix{"send", 1, 100, 100}, 8).bus_bytes, 100);
}

TEST(ProjectionCost, UnknownCollectiveIsNamed) {
  CollectiveMix mix{"alltoall", 1, 100, 100};
  try {
    collective_cost(mix, 8);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'alltoall'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cedar
