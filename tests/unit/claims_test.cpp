// Claims as data: parsing with clear errors, findings tested over seeds on confidence intervals
// (expected intervals from R's qt(0.975, df), computed by hand in the comments), accounting checks
// kept apart.
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

// A row of `seeds` completed runs that all measured the same (no spread between seeds).
ComparisonRow row(const std::string& name, const std::string& algorithm, double acc, double wall,
                  double compression, double modeled_1gbe, double wire = 0, int seeds = 3) {
  ComparisonRow r;
  r.name = name;
  r.algorithm = algorithm;
  r.model = "resnet20";
  r.dataset = "cifar10";
  r.world_size = 4;
  r.runs = r.completed = seeds;
  r.final_mean = acc;
  r.best_mean = acc;
  r.wall_mean = wall;
  r.payload_compression = compression;
  r.wire_ratio = wire;
  r.modeled_seconds.assign(network_profiles().size(), 1.0);
  r.modeled_seconds[0] = modeled_1gbe;  // 1gbe is the first profile
  for (int seed = 1; seed <= seeds; ++seed)
    r.seed_runs.push_back({seed, acc, acc, wall, compression, wire, r.modeled_seconds});
  return r;
}

// Three seeds per arm without spread: every finding's interval is its point, so the verdicts
// below are the bounds' own; accounting claims are checked on totals and listed apart.
TEST(Claims, VerdictsFromMeasuredRows) {
  ASSERT_EQ(network_profiles()[0].name, "1gbe");
  auto path = write("claims.yaml", R"(claims:
  - {text: "DGC within 1 point of dense", source: "Lin 2018 T2", kind: finding, run: dgc, metric: accuracy_gap, at_least: -1.0}
  - {text: "PowerSGD >= 100x fewer bytes", source: "Vogels 2019", kind: accounting, run: powersgd, metric: compression, at_least: 100}
  - {text: "local SGD faster on 1 GbE", source: "Lin 2020", kind: finding, run: local, metric: modeled_speedup, profile: 1gbe, at_least: 1.0}
  - {text: "missing run", source: "x", kind: finding, run: absent, metric: accuracy, at_least: 50}
  - {text: "accuracy window", source: "x", kind: finding, run: dgc, metric: accuracy, at_least: 91, at_most: 92}
  - {text: "DGC >= 270x on the wire", source: "x", kind: accounting, run: dgc, metric: wire_ratio, at_least: 270}
  - {text: "DGC >= 270x payload", source: "x", kind: accounting, run: dgc, metric: payload_compression, at_least: 270}
)");
  auto claims = load_claims(path);
  ASSERT_EQ(claims.size(), 7u);
  EXPECT_EQ(claims[1].metric, "payload_compression");  // `compression` is read as its older name
  EXPECT_EQ(claims[1].kind, "accounting");
  std::vector<ComparisonRow> rows = {row("dense", "dense", 0.920, 100, 1, 200),
                                     row("dgc", "dgc", 0.915, 90, 300, 120, 150),
                                     row("powersgd", "powersgd", 0.918, 80, 27.2, 110),
                                     row("local", "local-sgd", 0.919, 70, 4, 150)};
  auto v = evaluate_claims(claims, rows);
  EXPECT_EQ(v[0].verdict, "reproduced");
  EXPECT_NEAR(*v[0].measured, -0.5, 1e-9);
  EXPECT_TRUE(v[0].paired);                  // both arms ran seeds 1, 2, 3
  EXPECT_EQ(v[1].verdict, "does not hold");  // 27.2 < 100: reported, never hidden
  EXPECT_NEAR(*v[1].measured, 27.2, 1e-9);
  EXPECT_EQ(v[2].verdict, "reproduced");
  EXPECT_NEAR(*v[2].measured, 200.0 / 150.0, 1e-9);
  EXPECT_TRUE(v[2].ratio);
  EXPECT_EQ(v[3].verdict, "not enough runs");
  EXPECT_EQ(v[4].verdict, "reproduced");
  // An allgather's wire ratio is below its payload compression: the two are kept apart.
  EXPECT_EQ(v[5].verdict, "does not hold");
  EXPECT_NEAR(*v[5].measured, 150, 1e-9);
  EXPECT_EQ(v[6].verdict, "holds");
  EXPECT_NEAR(*v[6].measured, 300, 1e-9);
  std::string md = render_claims_markdown(v);
  EXPECT_NE(md.find("Accounting checks: follow from the format; they can only fail if metering "
                    "is broken."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| PowerSGD >= 100x fewer bytes | Vogels 2019 | – | powersgd | "
                    "payload_compression | ≥ 100 | 27.2 | 3 | does not hold |"),
            std::string::npos)
      << md;
  // Accounting checks are never counted among the findings' verdicts.
  EXPECT_NE(md.find("Findings: 3 reproduced, 0 not reproduced, 0 inconclusive, 0 not "
                    "discriminating, 0 insufficient seeds, 1 not enough runs."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Accounting: 1 holds, 2 does not hold, 0 not enough runs."), std::string::npos)
      << md;
  // The accounting table comes after every finding.
  EXPECT_LT(md.find("| accuracy window |"), md.find("Accounting checks"));
  EXPECT_GT(md.find("| DGC >= 270x payload |"), md.find("Accounting checks"));
}

// An accuracy gap needs its baseline's runs; payload compression does not (each step records the
// dense fp32 bytes it replaced).
TEST(Claims, WithoutDenseBaselineThereAreNotEnoughRuns) {
  auto path = write("nodense.yaml",
                    "claims:\n  - {kind: finding, run: dgc, metric: accuracy_gap, at_least: -1}\n"
                    "  - {kind: accounting, run: dgc, metric: compression, at_least: 10}\n");
  std::vector<ComparisonRow> rows = {row("dgc", "dgc", 0.9, 1, 300, 1)};
  auto v = evaluate_claims(load_claims(path), rows);
  EXPECT_EQ(v[0].verdict, "not enough runs");
  EXPECT_EQ(v[1].verdict, "holds");
  EXPECT_EQ(v[1].baseline_seeds, 0);
}

TEST(Claims, MalformedClaimsNameFileLineAndKey) {
  auto bad_metric =
      write("bad1.yaml", "claims:\n  - {kind: finding, run: dgc, metric: speed, at_least: 1}\n");
  try {
    load_claims(bad_metric);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(bad_metric + ":2:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'speed' is not one of"), std::string::npos) << e.what();
  }
  auto no_bound = write("bad2.yaml", "claims:\n  - {kind: finding, run: dgc, metric: accuracy}\n");
  EXPECT_THROW(load_claims(no_bound), ConfigError);
  auto typo =
      write("bad3.yaml", "claims:\n  - {kind: finding, run: dgc, metric: accuracy, at_leest: 3}\n");
  EXPECT_THROW(load_claims(typo), ConfigError);
}

void expect_error(const std::string& text, const std::string& needle) {
  auto path = write("badclaim.yaml", text);
  try {
    load_claims(path);
    ADD_FAILURE() << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path + ":"), std::string::npos) << e.what();
  }
}

// seed_tolerance widened a bound by the seeds' spread (a noisier result passed more easily): a
// file that still has it is refused at the key's line and column, saying why.
TEST(Claims, SeedToleranceIsRefusedWithItsPlaceAndWhy) {
  expect_error(
      "claims:\n  - kind: finding\n    run: dgc\n    metric: accuracy_gap\n    at_least: -1\n"
      "    seed_tolerance: 1\n",
      ":6:21: claims[].seed_tolerance was removed");
  expect_error(
      "claims:\n  - {kind: finding, run: dgc, metric: accuracy_gap, at_least: -1, seed_tolerance: "
      "1}\n",
      "noisier result passed more easily");
}

// Every claim states its kind; only bytes can be accounting.
TEST(Claims, KindIsRequiredAndAccountingIsBytesOnly) {
  expect_error("claims:\n  - {run: dgc, metric: payload_compression, at_least: 2}\n",
               "'kind' is required");
  expect_error("claims:\n  - {kind: bookkeeping, run: dgc, metric: wire_ratio, at_least: 2}\n",
               "'bookkeeping' is not one of");
  expect_error("claims:\n  - {kind: accounting, run: dgc, metric: accuracy_gap, at_least: -1}\n",
               "'accuracy_gap' is a finding");
  expect_error("claims:\n  - {kind: accounting, run: dgc, metric: wall_speedup, at_least: 1}\n",
               "only byte metrics");
  expect_error(
      "claims:\n  - {kind: accounting, run: dgc, control: x, metric: wire_ratio, at_least: 1}\n",
      "only findings take one");
}

// A named baseline replaces dense SGD: LAG is measured against plain gradient steps. LAG's bytes
// depend on its gradients: a finding, tested over seeds like its accuracy.
TEST(Claims, NamedBaselineReplacesDense) {
  auto path = write("baseline.yaml", R"(claims:
  - {text: acc, source: s, kind: finding, run: lag, baseline: sgd-plain, metric: accuracy_gap,
     at_least: -1.0, setting: "logistic regression", reduced: "ResNet-20, 8 epochs"}
  - {text: bytes, source: s, kind: finding, run: lag, baseline: sgd-plain,
     metric: payload_compression, at_least: 2}
)");
  std::vector<ComparisonRow> rows = {row("dense", "dense", 0.95, 1, 1, 1),
                                     row("sgd-plain", "dense", 0.90, 1, 1.25, 1),
                                     row("lag", "lag", 0.895, 1, 3.0, 1, 0, 2)};
  auto v = evaluate_claims(load_claims(path), rows);
  EXPECT_NEAR(*v[0].measured, -0.5, 1e-9);        // against sgd-plain, not dense (-5.5)
  EXPECT_EQ(v[0].verdict, "insufficient seeds");  // two seeds of lag
  EXPECT_FALSE(v[0].low);
  EXPECT_NEAR(*v[1].measured, 3.0 / 1.25, 1e-9);
  std::string md = render_claims_markdown(v);
  EXPECT_NE(
      md.find("| logistic regression | reduced scale: ResNet-20, 8 epochs | lag vs sgd-plain |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| 2 vs 3 | -0.5 | – | – | insufficient seeds, reduced scale |"),
            std::string::npos)
      << md;
  rows[2] = row("lag", "lag", 0.895, 1, 3.0, 1);
  v = evaluate_claims(load_claims(path), rows);
  EXPECT_EQ(v[0].verdict, "reproduced");
  EXPECT_EQ(v[1].verdict, "reproduced");
  EXPECT_TRUE(v[1].paired);
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
  - {text: all, source: s, kind: accounting, run: dgc, metric: payload_compression, at_least: 270}
  - {text: steady, source: s, kind: accounting, run: dgc, metric: payload_compression, at_least: 270, window: {from_epoch: 1}}
  - {text: last, source: s, kind: accounting, run: dgc, metric: wire_ratio, at_least: 100, window: {last_epoch: true}}
  - {text: step, source: s, kind: accounting, run: dgc, metric: payload_compression, at_least: 1, window: {from_step: 25}}
  - {text: found, source: s, kind: finding, run: dgc, metric: payload_compression, at_least: 270, window: {from_epoch: 1}}
)");
  ComparisonRow r = row("dgc", "dgc", 0.9, 1, 0, 1, 0, 1);
  r.world_size = 2;
  r.payload_compression = 30.0 * dense / (10.0 * warm + 20.0 * steady);  // whole run, from the rows
  ComparisonRow d = row("dense", "dense", 0.9, 1, 1, 1);
  d.world_size = 2;
  auto v = evaluate_claims(load_claims(path), {d, r}, database_window_reader(db, "w"));
  EXPECT_EQ(v[0].verdict, "does not hold");
  const double steady_ratio = (20.0 * dense) / (20.0 * steady + 10 * 0.5);  // + the odd bytes' mean
  EXPECT_NEAR(*v[1].measured, steady_ratio, 1e-9);
  EXPECT_EQ(v[1].verdict, "holds");
  EXPECT_NEAR(*v[2].measured, 1.0 * dense / steady, 1e-9);  // ring factor 2(P-1)/P = 1 at P = 2
  EXPECT_NEAR(*v[3].measured, (5.0 * dense) / (5.0 * steady + 3 * 0.5),
              1e-9);  // odd steps 25, 27, 29
  // As a finding the same window is read seed by seed: one seed is not enough to test.
  EXPECT_NEAR(*v[4].measured, steady_ratio, 1e-6);
  EXPECT_EQ(v[4].verdict, "insufficient seeds");
  EXPECT_EQ(v[4].seeds, 1);
  EXPECT_NE(render_claims_markdown(v).find("payload_compression, epochs ≥ 1 (counted from 0)"),
            std::string::npos);
  // Without a database a windowed claim cannot be measured.
  EXPECT_EQ(evaluate_claims(load_claims(path), {d, r})[1].verdict, "not enough runs");
  EXPECT_EQ(evaluate_claims(load_claims(path), {d, r})[4].verdict, "not enough runs");
}

TEST(Claims, WindowOnlyWhereItMeansSomething) {
  expect_error(
      "claims:\n  - {kind: finding, run: dgc, metric: accuracy_gap, at_least: -1, window: "
      "{from_epoch: 1}}\n",
      "only byte metrics");
  expect_error(
      "claims:\n  - {kind: accounting, run: dgc, metric: wire_ratio, at_least: 2, window: "
      "{from_epoch: 1, from_step: 3}}\n",
      "exactly one of");
  expect_error(
      "claims:\n  - {kind: accounting, run: dgc, metric: wire_ratio, at_least: 2, window: "
      "{from_eppoch: 1}}\n",
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
  auto path = write("dense_named.yaml",
                    "claims:\n  - {kind: finding, run: dgc, metric: accuracy_gap, at_least: -1}\n");
  EXPECT_NEAR(*evaluate_claims(load_claims(path), rows)[0].measured, -3.0, 1e-9);
}

}  // namespace
}  // namespace cedar
