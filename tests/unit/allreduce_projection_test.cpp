// `cedar project` and the crossover cost an allreduce as the scheme the run used
// (network.allreduce in its stored configuration): a tree run's allreduces as a binary tree's
// critical path, a two_level run's levels as a tree inside the node and a ring between leaders.
// The costs here are written by hand from the schemes' definitions.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "comm/network_model.h"
#include "reports/projection.h"
#include "results/store.h"

namespace cedar {
namespace {

constexpr double S = 4e6;  // bytes per allreduce

std::string fresh_db(const std::string& name) {
  std::string path = ::testing::TempDir() + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

// A run of 10 steps (one epoch) on `world` ranks, 0.05 s of compute a step, one allreduce of S
// per step: on the run's own communicator, or (ranks_per_node > 0) on levels intra and inter as
// a two_level run records it.
int64_t write_run(ResultStore& store, const std::string& name, const std::string& scheme, int world,
                  int ranks_per_node = 0) {
  RunRecord rec;
  rec.suite = "schemes";
  rec.name = name;
  rec.algorithm = "dense";
  rec.model = "resnet20";
  rec.dataset = "cifar10";
  rec.world_size = world;
  rec.config = "name: " + name + "\nnetwork:\n  profile: 10gbe\n  allreduce: " + scheme + "\n";
  rec.config_hash = name;
  rec.code_version = rec.host = rec.backend = "test";
  rec.network = "10gbe";
  const int64_t id = store.begin_run(rec);
  const auto s = int64_t(S);
  for (int64_t step = 0; step < 10; ++step) {
    StepRow row;
    row.step = step;
    row.compute_seconds = 0.05;
    row.payload_bytes = row.bus_bytes = row.dense_bytes = s;
    if (ranks_per_node > 0)
      row.levels = {{"inter", "10gbe", world / ranks_per_node, 1, s, s, 2, 0},
                    {"intra", "shm", ranks_per_node, 1, s, s, 2, 0}};
    store.add_step(id, row);
  }
  std::vector<CommTotalRow> totals;
  for (int r = 0; r < world; ++r) {
    if (ranks_per_node == 0) {
      totals.push_back({r, "allreduce", 10, 10 * s / 4, 10 * s, 10 * s, 0});
      continue;
    }
    totals.push_back({r, "intra/allreduce", 10, 10 * s / 4, 10 * s, 10 * s, 0});
    if (r % ranks_per_node == 0)
      totals.push_back({r, "inter/allreduce", 10, 10 * s / 4, 10 * s, 10 * s, 0});
  }
  store.add_comm_totals(id, totals);
  store.finish_run(id, "completed", "", RunSummary{});
  return id;
}

const RunMeasurement& named(const std::vector<RunMeasurement>& ms, const std::string& name) {
  for (const auto& m : ms)
    if (m.name == name) return m;
  throw std::runtime_error("no run " + name);
}

class AllreduceProjection : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = fresh_db("allreduce_projection_test.db");
    ResultStore store(path_);
    write_run(store, "library", "library", 4);
    write_run(store, "tree", "tree", 4);
    write_run(store, "hd", "halving_doubling", 4);
    write_run(store, "two", "two_level", 8, 4);
    write_run(store, "odd", "butterfly", 4);
  }
  static std::string path_;
};
std::string AllreduceProjection::path_;

TEST_F(AllreduceProjection, TheSchemeComesFromTheRunsConfiguration) {
  const auto ms = load_measurements(path_, "schemes");
  EXPECT_EQ(named(ms, "library").allreduce, AllreduceScheme::library);
  EXPECT_EQ(named(ms, "tree").allreduce, AllreduceScheme::tree);
  EXPECT_EQ(named(ms, "hd").allreduce, AllreduceScheme::halving_doubling);
  EXPECT_EQ(named(ms, "two").allreduce, AllreduceScheme::two_level);
  EXPECT_NE(named(ms, "odd").unusable.find("network.allreduce 'butterfly'"), std::string::npos);
}

TEST_F(AllreduceProjection, FlatSchemesAreCostedOnTheirCriticalPath) {
  const auto ms = load_measurements(path_, "schemes");
  const NetworkProfile& net = find_network_profile("10gbe");
  // P = 8: 5 steps per epoch (10 · 4 / 8).
  //   ring (library): 14 α and 2·7/8 S per step;
  //   tree: a binary tree on 8 ranks, 4 messages up (rank 3 waits for 7, rank 1 for 3, rank 0
  //         for 2 and then 1) and 4 down, each of S;
  //   halving-doubling: 2·3 α and 2·7/8 S.
  const double ring = 5 * (14 * net.alpha + 1.75 * S * net.beta);
  const double tree = 5 * (8 * net.alpha + 8 * S * net.beta);
  const double hd = 5 * (6 * net.alpha + 1.75 * S * net.beta);
  EXPECT_NEAR(project_point(named(ms, "library"), 8, net).comm_seconds, ring, 1e-12);
  EXPECT_NEAR(project_point(named(ms, "tree"), 8, net).comm_seconds, tree, 1e-12);
  EXPECT_NEAR(project_point(named(ms, "hd"), 8, net).comm_seconds, hd, 1e-12);
  // P = 6 for halving-doubling: 4 of the ranks halve and double, 2 hand over and get back.
  const double steps6 = 10 * 4 / 6.0;
  EXPECT_NEAR(project_point(named(ms, "hd"), 6, net).comm_seconds,
              steps6 * ((4 + 2) * net.alpha + (1.5 * S + 2 * S) * net.beta), 1e-12);
  // The allreduce bus bytes column follows the scheme too: 8 S per step for the tree at P = 8.
  EXPECT_NEAR(project_point(named(ms, "tree"), 8, net).allreduce_mb, 8 * S / 1e6, 1e-9);
}

TEST_F(AllreduceProjection, TwoLevelRunsCostATreeInTheNodeAndARingBetweenNodes) {
  const auto ms = load_measurements(path_, "schemes");
  const RunMeasurement& m = named(ms, "two");
  ASSERT_TRUE(m.unusable.empty()) << m.unusable;
  const NetworkProfile &net = find_network_profile("10gbe"), &shm = find_network_profile("shm");
  // P = 16: 5 steps per epoch (10 · 8 / 16); nodes keep their 4 ranks: a tree on 4 ranks, 2
  // messages up (rank 1 waits for 3, rank 0 for 2 and then 1) and 2 down, of S each, on shm;
  // 4 leaders: a ring, 6 α and 2·3/4 S, on 10gbe.
  const ProjectionPoint pt = project_point(m, 16, net);
  const double intra = 5 * (4 * shm.alpha + 4 * S * shm.beta);
  const double inter = 5 * (6 * net.alpha + 1.5 * S * net.beta);
  EXPECT_NEAR(pt.comm_seconds, intra + inter, 1e-12);
  ASSERT_EQ(pt.levels.size(), 2u);
  EXPECT_EQ(pt.levels[0].name, "inter");
  EXPECT_EQ(pt.levels[0].ranks, 4);
  EXPECT_NEAR(pt.levels[0].comm_seconds, inter, 1e-12);
  EXPECT_NEAR(pt.levels[1].comm_seconds, intra, 1e-12);
}

}  // namespace
}  // namespace cedar
