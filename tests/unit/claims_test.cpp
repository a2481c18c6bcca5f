// Claims as data: parsing with clear errors, and verdicts computed from comparison rows.
#include "reports/claims.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "comm/network_model.h"
#include "config/params.h"
#include "results/store.h"

namespace cedar {
namespace {

std::string write(const std::string& name, const std::string& text) {
  auto p = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(p) << text;
  return p.string();
}

ComparisonRow row(const std::string& name, const std::string& algorithm, double acc, double wall,
                  double compression, double modeled_1gbe, double wire = 0) {
  ComparisonRow r;
  r.name = name;
  r.algorithm = algorithm;
  r.model = "resnet20";
  r.dataset = "cifar10";
  r.world_size = 4;
  r.runs = r.completed = 1;
  r.final_mean = acc;
  r.best_mean = acc;
  r.wall_mean = wall;
  r.payload_compression = compression;
  r.wire_ratio = wire;
  r.modeled_seconds.assign(network_profiles().size(), 1.0);
  r.modeled_seconds[0] = modeled_1gbe;  // 1gbe is the first profile
  return r;
}

TEST(Claims, VerdictsFromMeasuredRows) {
  ASSERT_EQ(network_profiles()[0].name, "1gbe");
  auto path = write("claims.yaml", R"(claims:
  - {text: "DGC within 1 point of dense", source: "Lin 2018 T2", run: dgc, metric: accuracy_gap, at_least: -1.0}
  - {text: "PowerSGD >= 100x fewer bytes", source: "Vogels 2019", run: powersgd, metric: compression, at_least: 100}
  - {text: "local SGD faster on 1 GbE", source: "Lin 2020", run: local, metric: modeled_speedup, profile: 1gbe, at_least: 1.0}
  - {text: "missing run", source: "x", run: absent, metric: accuracy, at_least: 50}
  - {text: "accuracy window", source: "x", run: dgc, metric: accuracy, at_least: 91, at_most: 92}
  - {text: "DGC >= 270x on the wire", source: "x", run: dgc, metric: wire_ratio, at_least: 270}
  - {text: "DGC >= 270x payload", source: "x", run: dgc, metric: payload_compression, at_least: 270}
)");
  auto claims = load_claims(path);
  ASSERT_EQ(claims.size(), 7u);
  EXPECT_EQ(claims[1].metric, "payload_compression");  // `compression` is read as its older name
  std::vector<ComparisonRow> rows = {row("dense", "dense", 0.920, 100, 1, 200),
                                     row("dgc", "dgc", 0.915, 90, 300, 120, 150),
                                     row("powersgd", "powersgd", 0.918, 80, 27.2, 110),
                                     row("local", "local-sgd", 0.919, 70, 4, 150)};
  auto v = evaluate_claims(claims, rows);
  EXPECT_EQ(v[0].verdict, "reproduced");
  EXPECT_NEAR(*v[0].measured, -0.5, 1e-9);
  EXPECT_EQ(v[1].verdict, "not reproduced");  // 27.2 < 100: reported, never hidden
  EXPECT_NEAR(*v[1].measured, 27.2, 1e-9);
  EXPECT_EQ(v[2].verdict, "reproduced");
  EXPECT_NEAR(*v[2].measured, 200.0 / 150.0, 1e-9);
  EXPECT_EQ(v[3].verdict, "not enough runs");
  EXPECT_EQ(v[4].verdict, "reproduced");
  // An allgather's wire ratio is below its payload compression: the two are kept apart.
  EXPECT_EQ(v[5].verdict, "not reproduced");
  EXPECT_NEAR(*v[5].measured, 150, 1e-9);
  EXPECT_EQ(v[6].verdict, "reproduced");
  EXPECT_NEAR(*v[6].measured, 300, 1e-9);
  std::string md = render_claims_markdown(v);
  EXPECT_NE(md.find("| PowerSGD >= 100x fewer bytes | Vogels 2019 | – | – | powersgd | "
                    "payload_compression | ≥ 100 | 27.2 | 1 | not reproduced |"),
            std::string::npos)
      << md;
}

// An accuracy gap needs its baseline's runs; payload compression does not (each step records the
// dense fp32 bytes it replaced).
TEST(Claims, WithoutDenseBaselineThereAreNotEnoughRuns) {
  auto path = write("nodense.yaml",
                    "claims:\n  - {run: dgc, metric: accuracy_gap, at_least: -1}\n"
                    "  - {run: dgc, metric: compression, at_least: 10}\n");
  std::vector<ComparisonRow> rows = {row("dgc", "dgc", 0.9, 1, 300, 1)};
  auto v = evaluate_claims(load_claims(path), rows);
  EXPECT_EQ(v[0].verdict, "not enough runs");
  EXPECT_EQ(v[1].verdict, "reproduced");
  EXPECT_EQ(v[1].baseline_seeds, 0);
}

TEST(Claims, MalformedClaimsNameFileLineAndKey) {
  auto bad_metric = write("bad1.yaml", "claims:\n  - {run: dgc, metric: speed, at_least: 1}\n");
  try {
    load_claims(bad_metric);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(bad_metric + ":2:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'speed' is not one of"), std::string::npos) << e.what();
  }
  auto no_bound = write("bad2.yaml", "claims:\n  - {run: dgc, metric: accuracy}\n");
  EXPECT_THROW(load_claims(no_bound), ConfigError);
  auto typo = write("bad3.yaml", "claims:\n  - {run: dgc, metric: accuracy, at_leest: 3}\n");
  EXPECT_THROW(load_claims(typo), ConfigError);
}

// The seed spread widens an accuracy bound by seed_tolerance × the spread of the gap
// (√(sd_run² + sd_base²)); a single seed has none, and the table labels it.
TEST(Claims, SeedToleranceWidensByTheSpreadOfTheGap) {
  auto path = write("seeds.yaml", R"(claims:
  - {text: tight, source: s, run: dgc, metric: accuracy_gap, at_least: -1.0}
  - {text: loose, source: s, run: dgc, metric: accuracy_gap, at_least: -1.0, seed_tolerance: 2}
)");
  ComparisonRow dense = row("dense", "dense", 0.920, 1, 1, 1),
                dgc = row("dgc", "dgc", 0.906, 1, 1, 1);
  dense.runs = dense.completed = dgc.runs = dgc.completed = 3;
  dense.final_std = 0.003;
  dgc.final_std = 0.004;  // spread of the gap: 100 × hypot(0.003, 0.004) = 0.5 points
  auto v = evaluate_claims(load_claims(path), {dense, dgc});
  EXPECT_NEAR(*v[0].measured, -1.4, 1e-9);
  EXPECT_EQ(v[0].verdict, "not reproduced");
  EXPECT_NEAR(*v[1].applied_at_least, -2.0, 1e-9);
  EXPECT_EQ(v[1].verdict, "reproduced");
  EXPECT_EQ(v[1].seeds, 3);
  EXPECT_EQ(v[1].baseline_seeds, 3);
  std::string md = render_claims_markdown(v);
  EXPECT_NE(md.find("≥ -1 (-2 with 2× seed spread)"), std::string::npos) << md;
  EXPECT_EQ(md.find("single seed"), std::string::npos) << md;
  dgc.runs = dgc.completed = 1;
  md = render_claims_markdown(evaluate_claims(load_claims(path), {dense, dgc}));
  EXPECT_NE(md.find("| 1 vs 3 | not reproduced, single seed |"), std::string::npos) << md;
}

// A named baseline replaces dense SGD: LAG is measured against plain gradient steps.
TEST(Claims, NamedBaselineReplacesDense) {
  auto path = write("baseline.yaml", R"(claims:
  - {text: acc, source: s, run: lag, baseline: sgd-plain, metric: accuracy_gap, at_least: -1.0,
     setting: "logistic regression", reduced: "ResNet-20, 8 epochs"}
  - {text: bytes, source: s, run: lag, baseline: sgd-plain, metric: payload_compression, at_least: 2}
)");
  std::vector<ComparisonRow> rows = {row("dense", "dense", 0.95, 1, 1, 1),
                                     row("sgd-plain", "dense", 0.90, 1, 1.25, 1),
                                     row("lag", "lag", 0.895, 1, 3.0, 1)};
  auto v = evaluate_claims(load_claims(path), rows);
  EXPECT_NEAR(*v[0].measured, -0.5, 1e-9);  // against sgd-plain, not dense (-5.5)
  EXPECT_EQ(v[0].verdict, "reproduced");
  EXPECT_NEAR(*v[1].measured, 3.0 / 1.25, 1e-9);
  std::string md = render_claims_markdown(v);
  EXPECT_NE(
      md.find("| logistic regression | reduced scale: ResNet-20, 8 epochs | lag vs sgd-plain |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("reproduced, single seed, reduced scale |"), std::string::npos) << md;
  rows.erase(rows.begin() + 1);
  EXPECT_EQ(evaluate_claims(load_claims(path), rows)[0].verdict, "not enough runs");
}

// A window measures bytes over the steady state only: DGC's warm-up epoch sends 25% of the
// coordinates, the next epochs 0.1%; the oracle below is the ratio of hand-written totals.
TEST(Claims, WindowReadsOnlyItsStepsFromTheDatabase) {
  const std::string db = (std::filesystem::path(::testing::TempDir()) / "window.db").string();
  std::filesystem::remove(db);
  const int64_t dense = 4'000'000, warm = 2'000'000, steady = 8'000;  // bytes per rank per step
  {
    ResultStore store(db);
    RunRecord rec;
    rec.suite = "w";
    rec.name = "dgc";
    rec.algorithm = "dgc";
    rec.model = "resnet20";
    rec.dataset = "cifar10";
    rec.world_size = 2;
    rec.config = rec.config_hash = "x";
    const int64_t id = store.begin_run(rec);
    for (int64_t step = 0; step < 30; ++step) {
      StepRow r;
      r.step = step;
      r.epoch = step / 10;
      const int64_t own = r.epoch == 0 ? warm : steady;
      r.payload_bytes = own;
      r.payload_bytes_all = 2 * own + (step % 2);  // the ranks' mean is what counts
      r.bus_bytes = own;  // allgather at P = 2: each rank receives one payload
      r.dense_bytes = dense;
      store.add_step(id, r);
    }
    store.finish_run(id, "completed", "", RunSummary{});
  }
  auto path = write("window.yaml", R"(claims:
  - {text: all, source: s, run: dgc, metric: payload_compression, at_least: 270}
  - {text: steady, source: s, run: dgc, metric: payload_compression, at_least: 270, window: {from_epoch: 1}}
  - {text: last, source: s, run: dgc, metric: wire_ratio, at_least: 100, window: {last_epoch: true}}
  - {text: step, source: s, run: dgc, metric: payload_compression, at_least: 1, window: {from_step: 25}}
)");
  ComparisonRow r = row("dgc", "dgc", 0.9, 1, 0, 1);
  r.world_size = 2;
  r.payload_compression = 30.0 * dense / (10.0 * warm + 20.0 * steady);  // whole run, from the rows
  ComparisonRow d = row("dense", "dense", 0.9, 1, 1, 1);
  d.world_size = 2;
  auto v = evaluate_claims(load_claims(path), {d, r}, database_window_reader(db, "w"));
  EXPECT_EQ(v[0].verdict, "not reproduced");
  const double steady_ratio = (20.0 * dense) / (20.0 * steady + 10 * 0.5);  // + the odd bytes' mean
  EXPECT_NEAR(*v[1].measured, steady_ratio, 1e-9);
  EXPECT_EQ(v[1].verdict, "reproduced");
  EXPECT_NEAR(*v[2].measured, 1.0 * dense / steady, 1e-9);  // ring factor 2(P-1)/P = 1 at P = 2
  EXPECT_NEAR(*v[3].measured, (5.0 * dense) / (5.0 * steady + 3 * 0.5),
              1e-9);  // odd steps 25, 27, 29
  EXPECT_NE(render_claims_markdown(v).find("payload_compression, epochs ≥ 1"), std::string::npos);
  // Without a database a windowed claim cannot be measured.
  EXPECT_EQ(evaluate_claims(load_claims(path), {d, r})[1].verdict, "not enough runs");
}

TEST(Claims, WindowAndSeedToleranceOnlyWhereTheyMeanSomething) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    auto path = write("badwin.yaml", text);
    try {
      load_claims(path);
      FAIL() << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path + ":"), std::string::npos) << e.what();
    }
  };
  expect_error(
      "claims:\n  - {run: dgc, metric: accuracy_gap, at_least: -1, window: {from_epoch: 1}}\n",
      "only byte metrics");
  expect_error(
      "claims:\n  - {run: dgc, metric: payload_compression, at_least: 2, seed_tolerance: 1}\n",
      "only accuracy metrics vary with the seed");
  expect_error(
      "claims:\n  - {run: dgc, metric: wire_ratio, at_least: 2, window: {from_epoch: 1, from_step: "
      "3}}\n",
      "exactly one of");
  expect_error(
      "claims:\n  - {run: dgc, metric: wire_ratio, at_least: 2, window: {from_eppoch: 1}}\n",
      "from_eppoch");
}

// Several dense-algorithm runs in one suite (plain steps, large batches): the baseline of a gap is
// the run named "dense", whatever order the runs were recorded in, in the table and in claims.
TEST(Claims, TheBaselineIsTheRunNamedDenseWhateverItsPlace) {
  auto result = [](int64_t id, const std::string& name, const std::string& algorithm, double acc) {
    RunResult r;
    r.id = id;
    r.suite = "s";
    r.name = name;
    r.algorithm = algorithm;
    r.model = "resnet20";
    r.dataset = "cifar10";
    r.status = "completed";
    r.world_size = 4;
    r.final_accuracy = r.best_accuracy = acc;
    return r;
  };
  // sgd-plain was recorded first; dense (re-measured) last.
  auto rows = compare_runs({result(1, "sgd-plain", "dense", 0.90), result(2, "dgc", "dgc", 0.89),
                            result(3, "dense", "dense", 0.92)});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NEAR(rows[1].gap_to_dense, 0.89 - 0.92, 1e-12);
  EXPECT_NEAR(rows[0].gap_to_dense, 0.90 - 0.92, 1e-12);
  auto path =
      write("dense_named.yaml", "claims:\n  - {run: dgc, metric: accuracy_gap, at_least: -1}\n");
  EXPECT_NEAR(*evaluate_claims(load_claims(path), rows)[0].measured, -3.0, 1e-9);
}

}  // namespace
}  // namespace cedar
