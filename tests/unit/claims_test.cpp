// Claims as data: parsing with clear errors, and verdicts computed from comparison rows.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "reports/claims.h"
#include "runner/comm/network_model.h"
#include "runner/params.h"

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
  EXPECT_NE(md.find("| PowerSGD >= 100x fewer bytes | Vogels 2019 | powersgd | payload_compression | ≥ 100 | 27.2 | not reproduced |"),
            std::string::npos)
      << md;
}

TEST(Claims, WithoutDenseBaselineThereAreNotEnoughRuns) {
  auto path = write("nodense.yaml", "claims:\n  - {run: dgc, metric: compression, at_least: 10}\n");
  std::vector<ComparisonRow> rows = {row("dgc", "dgc", 0.9, 1, 300, 1)};
  EXPECT_EQ(evaluate_claims(load_claims(path), rows)[0].verdict, "not enough runs");
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

}  // namespace
}  // namespace cedar
