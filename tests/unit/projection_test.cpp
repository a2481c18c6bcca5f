// Projection to more workers: the per-step collective mix read back from comm_totals, the α–β
// cost on P ranks (allreduce bytes bounded, allgather bytes linear in P), steps per epoch under a
// fixed per-rank batch, and the speed-ups.
#include "reports/projection.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "comm/network_model.h"
#include "reports/level_bytes.h"
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
  // The measured epoch's samples at every P: 100 steps of 4 ranks = 400 batches, 400 / P steps.
  const double steps[] = {100, 50, 6.25, 1.5625, 0.390625};
  auto dense_epoch = [&](int p, double spe) {
    return spe * (0.05 + 2 * (p - 1) * net.alpha + 2.0 * (p - 1) / p * kDenseBytes * net.beta);
  };
  auto topk_epoch = [&](int p, double spe) {
    return spe * (0.05 + (p - 1) * net.alpha + (p - 1) * kSparseBytes * net.beta);
  };
  for (int i = 0; i < 5; ++i) {
    const int p = workers[i];
    const auto& d = dense.points[static_cast<size_t>(i)];
    const auto& t = topk.points[static_cast<size_t>(i)];
    EXPECT_EQ(d.workers, p);
    EXPECT_DOUBLE_EQ(d.steps_per_epoch, steps[i]) << p;
    EXPECT_NEAR(d.compute_seconds, 0.05 * steps[i], 1e-12);
    EXPECT_NEAR(d.total_seconds, dense_epoch(p, steps[i]), 1e-9) << p;
    EXPECT_NEAR(t.total_seconds, topk_epoch(p, steps[i]), 1e-9) << p;
    EXPECT_NEAR(d.allreduce_mb, 2.0 * (p - 1) / p * kDenseBytes / 1e6, 1e-9);
    EXPECT_NEAR(t.allgather_mb, (p - 1) * kSparseBytes / 1e6, 1e-9);
    EXPECT_NEAR(d.speedup_vs_measured, dense_epoch(4, 100) / dense_epoch(p, steps[i]), 1e-9);
    EXPECT_NEAR(d.speedup_vs_dense, 1.0, 1e-12);
    EXPECT_NEAR(t.speedup_vs_dense, dense_epoch(p, steps[i]) / topk_epoch(p, steps[i]), 1e-9);
  }
  EXPECT_EQ(topk.dense_name, "dense");
  // 1% top-k beats the dense allreduce on 8 ranks and loses to it on 256.
  EXPECT_GT(topk.points[1].speedup_vs_dense, 1.0);
  EXPECT_LT(topk.points[3].speedup_vs_dense, 1.0);
}

// Steps per epoch that do not divide: 19 steps of 4 ranks (76 batches of samples) are 4.75 steps
// at 16 workers and 1.1875 at 64, not 4 and 1 (which would train 64 of the 76 batches, 16% less
// work). Time and speed-up are for the same 76 batches at each P.
TEST(SameSamplesProjection, StepsThatDoNotDivideKeepEverySample) {
  const std::string path = fresh_db("projection_uneven_test.db");
  {
    ResultStore store(path);
    RunSpec d =
        spec("uneven", "dense", "dense", {"allreduce", 1, {4000000, 4000000, 4000000, 4000000}});
    d.steps_per_epoch = 19;
    d.compute_seconds = 0.2;
    fixture::write_run(store, d);
  }
  const NetworkProfile& net = find_network_profile("1gbe");
  auto ms = load_measurements(path, "uneven");
  auto ps = project_runs(ms, ms, {16, 64}, net);
  ASSERT_EQ(ps.size(), 1u);
  ASSERT_EQ(ps[0].points.size(), 3u);
  // Per step on P ranks (ring allreduce of 4 MB): 0.2 s + 2(P-1) α + 2(P-1)/P · 4e6 · β.
  auto step = [&](double p) {
    return 0.2 + 2 * (p - 1) * 50e-6 + 2 * (p - 1) / p * 4e6 * 8e-9;  // 1gbe: 50 µs, 1 Gb/s
  };
  const double samples = 19.0 * 4;  // batches of the measured epoch
  const double measured = 19 * step(4);
  for (const auto& pt : ps[0].points) {
    const double p = pt.workers;
    EXPECT_DOUBLE_EQ(pt.steps_per_epoch * p, samples) << p;
    EXPECT_NEAR(pt.total_seconds, samples / p * step(p), 1e-9) << p;
    EXPECT_NEAR(pt.speedup_vs_measured, measured / (samples / p * step(p)), 1e-9) << p;
  }
  EXPECT_DOUBLE_EQ(ps[0].points[1].steps_per_epoch, 4.75);
  EXPECT_DOUBLE_EQ(ps[0].points[2].steps_per_epoch, 1.1875);
  const std::string md = render_projection_markdown(ps);
  EXPECT_NE(md.find("| 16 | 4.75 |"), std::string::npos) << md;
  EXPECT_NE(md.find("measured epoch's samples"), std::string::npos) << md;
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
  EXPECT_DOUBLE_EQ(ps[0].points[1].steps_per_epoch, 50);  // 100 · 2 / 4
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

// Point-to-point messages cost what they measured on any P: one latency step per send or
// sendrecv and its payload; a recv nothing (its sender counts it); nothing on one rank.
TEST(ProjectionCost, PointToPointIsCostedAsMeasured) {
  for (const char* op : {"send", "sendrecv"}) {
    CollectiveMix mix{op, 3, 9952, 9952};
    for (int p : {2, 8, 64}) {
      EXPECT_DOUBLE_EQ(collective_cost(mix, p).latency_steps, 3) << op << " " << p;
      EXPECT_DOUBLE_EQ(collective_cost(mix, p).bus_bytes, 9952) << op << " " << p;
    }
    EXPECT_DOUBLE_EQ(collective_cost(mix, 1).bus_bytes, 0) << op;
  }
  CollectiveMix recv{"recv", 1, 0, 0};
  EXPECT_DOUBLE_EQ(collective_cost(recv, 8).latency_steps, 0);
  EXPECT_DOUBLE_EQ(collective_cost(recv, 8).bus_bytes, 0);
}

// A hierarchical run on 4 ranks in nodes of 2, written as the trainer writes it: per step, rank 0
// (a leader) allreduces and broadcasts S bytes inside its node (shm) and allgathers q bytes
// between the 2 leaders (10gbe); 10 steps in one epoch, 0.05 s of compute each.
class LevelProjectionTest : public ::testing::Test {
 protected:
  static constexpr double S = 4e6, q = 1e5;
  static void SetUpTestSuite() {
    path_ = fresh_db("projection_levels_test.db");
    ResultStore store(path_);
    RunRecord rec;
    rec.suite = "levels";
    rec.name = "hier";
    rec.algorithm = "hierarchical";
    rec.model = "resnet20";
    rec.dataset = "cifar10";
    rec.world_size = 4;
    rec.config = "name: hier";
    rec.config_hash = "levels";
    rec.code_version = rec.host = rec.backend = "test";
    rec.network = "10gbe";
    const int64_t id = store.begin_run(rec);
    const auto s = int64_t(S), k = int64_t(q);
    const NetworkProfile &shm = find_network_profile("shm"), &net = find_network_profile("10gbe");
    for (int64_t step = 0; step < 10; ++step) {
      StepRow row;
      row.step = step;
      row.compute_seconds = 0.05;
      row.payload_bytes = row.bus_bytes = 2 * s + k;
      row.dense_bytes = s;
      row.latency_steps = 4;
      row.levels = {{"inter", "10gbe", 2, 1, k, k, 1, net.seconds(1, k)},
                    {"intra", "shm", 2, 2, 2 * s, 2 * s, 3, shm.seconds(3, 2 * s)}};
      row.modeled_comm_seconds =
          row.levels[0].modeled_comm_seconds + row.levels[1].modeled_comm_seconds;
      store.add_step(id, row);
    }
    std::vector<CommTotalRow> totals;
    for (int r = 0; r < 4; ++r) {
      totals.push_back({r, "split", 2, 0, 16, 48, 0});  // before training: left out
      totals.push_back({r, "intra/allreduce", 10, 10 * s / 4, 10 * s, 10 * s, 0});
      totals.push_back({r, "intra/broadcast", 10, 10 * s / 4, r % 2 == 0 ? 10 * s : 0, 10 * s, 0});
      if (r % 2 == 0) totals.push_back({r, "inter/allgather", 10, 10 * k, 10 * k, 10 * k, 0});
    }
    store.add_comm_totals(id, totals);
    store.finish_run(id, "completed", "", RunSummary{});
  }
  static std::string path_;
};
std::string LevelProjectionTest::path_;

TEST_F(LevelProjectionTest, EachLevelIsCostedOnItsOwnProfile) {
  auto ms = load_measurements(path_, "levels");
  ASSERT_EQ(ms.size(), 1u);
  const RunMeasurement& m = ms[0];
  ASSERT_TRUE(m.unusable.empty()) << m.unusable;
  EXPECT_TRUE(m.collectives.empty()) << "split is not part of a step";
  ASSERT_EQ(m.levels.size(), 2u);
  ASSERT_EQ(m.levels[0].name, "inter");
  ASSERT_EQ(m.levels[1].name, "intra");
  EXPECT_EQ(m.levels[1].profile, "shm");
  const CollectiveMix& ag = m.levels[0].collectives.at(0);
  EXPECT_DOUBLE_EQ(ag.calls, 1);          // per leader and step
  EXPECT_DOUBLE_EQ(ag.payload_bytes, q);  // not diluted by the non-leaders
  EXPECT_DOUBLE_EQ(ag.share, 0.5);
  // At the measured size the levels give back the steps table's α terms and bus bytes.
  const CollectiveCost own = step_cost(m, 4);
  EXPECT_DOUBLE_EQ(own.latency_steps, m.recorded_latency_steps);
  EXPECT_DOUBLE_EQ(own.bus_bytes, m.recorded_bus_bytes);

  // Hand-computed, P = 8: 5 steps per epoch (10 · 4 / 8); inside a node still 2 ranks: 3 α and
  // 2S bus bytes per step on shm (α 0.5 µs, β 1e-10 s/B); between nodes 4 leaders: an allgather
  // of q, 3 α and 3q bytes per step on 10gbe (α 20 µs, β 8e-10 s/B).
  const double intra8 = 5 * 3 * 0.5e-6 + 5 * 2 * S * 1e-10;  // 0.0040075 s
  const double inter8 = 5 * 3 * 20e-6 + 5 * 3 * q * 8e-10;   // 0.0015 s
  // P = 4 (measured): 10 steps; 2 leaders: 1 α and q bytes per step.
  const double intra4 = 10 * 3 * 0.5e-6 + 10 * 2 * S * 1e-10;  // 0.008015 s
  const double inter4 = 10 * 1 * 20e-6 + 10 * q * 8e-10;       // 0.001 s
  const auto ps = project_runs(ms, ms, {8}, find_network_profile("10gbe"));
  ASSERT_EQ(ps.size(), 1u);
  ASSERT_EQ(ps[0].points.size(), 2u);
  const ProjectionPoint &p4 = ps[0].points[0], &p8 = ps[0].points[1];
  EXPECT_NEAR(p4.comm_seconds, intra4 + inter4, 1e-12);
  EXPECT_NEAR(p8.comm_seconds, intra8 + inter8, 1e-12);
  EXPECT_NEAR(p8.total_seconds, 5 * 0.05 + intra8 + inter8, 1e-12);
  ASSERT_EQ(p8.levels.size(), 2u);
  EXPECT_EQ(p8.levels[0].ranks, 4);  // leaders at P = 8
  EXPECT_EQ(p8.levels[1].ranks, 2);  // a node stays 2 ranks
  EXPECT_NEAR(p8.levels[0].comm_seconds, inter8, 1e-12);
  EXPECT_NEAR(p8.levels[1].comm_seconds, intra8, 1e-12);
  EXPECT_NEAR(p8.levels[0].bus_mb, 3 * q / 1e6, 1e-12);
  // Payload: S (allreduce) + S/2 (the broadcast's root is half the ranks) + q/2 (leaders).
  EXPECT_NEAR(p8.payload_compression, S / (S + S / 2 + q / 2), 1e-12);
  // Another profile inside the node: 1gbe (α 50 µs, β 8e-9 s/B).
  const auto slow =
      project_runs(ms, ms, {8}, find_network_profile("10gbe"), &find_network_profile("1gbe"));
  EXPECT_NEAR(slow[0].points[1].comm_seconds, 5 * 3 * 50e-6 + 5 * 2 * S * 8e-9 + inter8, 1e-12);
  const std::string md = render_projection_markdown(ps);
  EXPECT_NE(md.find("inter s/epoch"), std::string::npos) << md;
  EXPECT_NE(md.find("Level intra (2 ranks per group at 4 ranks, recorded on shm)"),
            std::string::npos)
      << md;
}

TEST_F(LevelProjectionTest, LevelBytesTableHasEachLevelPerStepAndPerRun) {
  const auto rows = load_level_bytes(path_, "levels");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].level, "inter");
  EXPECT_EQ(rows[0].profile, "10gbe");
  EXPECT_DOUBLE_EQ(rows[0].payload_bytes_per_step, q);
  EXPECT_EQ(rows[0].total_payload_bytes, int64_t(2 * 10 * q));  // two leaders, 10 steps
  EXPECT_EQ(rows[1].level, "intra");
  EXPECT_EQ(rows[1].ranks, 2);
  EXPECT_DOUBLE_EQ(rows[1].payload_bytes_per_step, 2 * S);
  EXPECT_DOUBLE_EQ(rows[1].bus_bytes_per_step, 2 * S);
  // Every rank's allreduce (4 · 10 S) and the two roots' broadcasts (2 · 10 S).
  EXPECT_EQ(rows[1].total_payload_bytes, int64_t(60 * S));
  EXPECT_EQ(rows[1].total_bus_bytes, int64_t(80 * S));
  EXPECT_NEAR(rows[1].modeled_seconds_per_step, 3 * 0.5e-6 + 2 * S * 1e-10, 1e-15);
  const std::string md = render_level_bytes_markdown(rows);
  EXPECT_NE(md.find("| hier | hierarchical | 4 | 0 | intra | 2 | shm | 8.0000 | 8.0000 |"),
            std::string::npos)
      << md;
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

// A parameter server's epoch: G gradients pushed through the servers' links and answered by them,
// so the communication per epoch is the same at any number of workers P, while the compute (G/P
// gradients in parallel) shrinks: written here from the wire format (runner/ps/protocol.h:
// a push is 32 + 4n bytes, a reply 16 + 4n), not the code. bsp: the replies follow each round, so
// the link's two directions take turns: α·4G + β·G·(push + pull)/S. asp: both directions at once.
TEST(ParameterServerProjection, TheServersLinksCarryEveryPushAndEveryReply) {
  const double n = 61706;
  RunMeasurement m;
  m.name = "ps-bsp";
  m.algorithm = "ps";
  m.world_size = 5;  // 4 workers + 1 server
  m.servers = 1;
  m.gradients_per_epoch = 1000;
  m.push_bytes_per_gradient = 32 + 4 * n;
  m.pull_bytes_per_gradient = 16 + 4 * n;
  m.compute_seconds_per_step = 0.01;  // one gradient
  m.dense_payload_bytes = 4 * n;
  const NetworkProfile& net = find_network_profile("1gbe");
  for (int p : {4, 16, 64}) {
    const ProjectionPoint pt = project_point(m, p, net);
    EXPECT_DOUBLE_EQ(pt.steps_per_epoch, 1000.0 / p);  // 15.625 rounds at 64: every gradient
    EXPECT_NEAR(pt.comm_seconds, net.alpha * 4000 + net.beta * 1000 * (48 + 8 * n), 1e-9)
        << "P = " << p;
    EXPECT_NEAR(pt.compute_seconds, 0.01 * 1000.0 / p, 1e-12);
    EXPECT_EQ(pt.measured, p == 4);
  }
  // Two servers halve each link's bytes (the messages stay: each server gets a header and a
  // gradient shard per push, and answers each with a header and its shard).
  m.servers = 2;
  m.world_size = 6;
  EXPECT_NEAR(project_point(m, 4, net).comm_seconds,
              net.alpha * 4000 + net.beta * 1000 * (48 + 8 * n) / 2.0, 1e-9);
  EXPECT_EQ(measured_workers(m), 4);
  // asp: pushes and replies share the full-duplex link at once: the larger direction counts.
  m.synchronous = false;
  EXPECT_NEAR(project_point(m, 4, net).comm_seconds,
              net.alpha * 2000 + net.beta * 1000 * (32 + 4 * n) / 2.0, 1e-9);
}

// The replies are read from the servers' own sends (comm_totals rows of ranks below `servers`),
// the mode from the run's configuration; G from the 'gradients' step statistics.
TEST(ParameterServerProjection, RepliesAndModeAreReadFromTheDatabase) {
  const std::string path = fresh_db("projection_ps_test.db");
  const int64_t n = 1000, push = 32 + 4 * n, reply = 16 + 4 * n;
  auto write = [&](ResultStore& store, const std::string& mode, int64_t per_row) {
    RunRecord rec;
    rec.suite = "ps";
    rec.name = "ps-" + mode;
    rec.algorithm = "ps";
    rec.model = "lenet5";
    rec.dataset = "fashion-mnist";
    rec.world_size = 4;
    rec.workers = 3;
    rec.servers = 1;
    rec.config = "name: ps-" + mode + "\nalgorithm:\n  name: ps\n  mode: " + mode + "\n";
    rec.config_hash = "ps-" + mode;
    rec.code_version = rec.host = rec.backend = "test";
    rec.network = "1gbe";
    const int64_t id = store.begin_run(rec);
    const int64_t rows = 60 / per_row;  // 60 gradients over 2 epochs
    for (int64_t i = 0; i < rows; ++i) {
      StepRow row;
      row.step = i;
      row.epoch = i * 2 / rows;
      row.compute_seconds = 0.01;
      row.payload_bytes = row.bus_bytes = push;
      row.payload_bytes_all = per_row * push;
      row.dense_bytes = 4 * n;
      row.stats = {{"gradients", double(per_row)}};
      store.add_step(id, row);
    }
    std::vector<CommTotalRow> totals = {{0, "send", 120, 60 * (reply / 4), 60 * reply, 0, 0}};
    for (int r = 1; r < 4; ++r) totals.push_back({r, "send", 40, 20 * (push / 4), 20 * push, 0, 0});
    store.add_comm_totals(id, totals);
    store.finish_run(id, "completed", "", RunSummary{});
  };
  {
    ResultStore store(path);
    write(store, "bsp", 3);
    write(store, "asp", 1);
  }
  auto ms = load_measurements(path, "ps");
  ASSERT_EQ(ms.size(), 2u);
  for (const auto& m : ms) {
    ASSERT_TRUE(m.unusable.empty()) << m.unusable;
    EXPECT_EQ(measured_workers(m), 3);
    EXPECT_DOUBLE_EQ(m.gradients_per_epoch, 30);
    EXPECT_DOUBLE_EQ(m.push_bytes_per_gradient, double(push)) << m.name;
    EXPECT_DOUBLE_EQ(m.pull_bytes_per_gradient, double(reply)) << m.name;
  }
  EXPECT_TRUE(ms[0].synchronous);
  EXPECT_FALSE(ms[1].synchronous);
  const NetworkProfile& net = find_network_profile("1gbe");
  EXPECT_NEAR(project_point(ms[0], 3, net).comm_seconds,
              net.alpha * 120 + net.beta * 30 * double(push + reply), 1e-12);
}

}  // namespace
}  // namespace cedar
