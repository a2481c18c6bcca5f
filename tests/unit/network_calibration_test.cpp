// `cedar network calibrate`'s fit and profiles: α and β recovered from synthetic timings made
// with known values on each collective's own form (exactly, and within a stated tolerance under
// seeded noise); the profile file's per-collective format (old files unchanged, round trip, bad
// entries named); the nearest-P lookup.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "comm/alpha_beta_least_squares.h"
#include "comm/calibrated_profile.h"
#include "comm/network_model.h"
#include "comm/network_profile_file.h"
#include "config/params.h"

namespace cedar {
namespace {

const std::vector<double> kSizes = {4096,   8192,    16384,   32768,   65536,   131072,  262144,
                                    524288, 1048576, 2097152, 4194304, 8388608, 16777216};
const std::vector<int> kWorlds = {2, 3, 4, 8, 16};

// The form written out by hand for each op, independent of collective_terms: seconds of one call.
double oracle_seconds(const std::string& op, int p, double bytes, double a, double b) {
  const double log2p = std::ceil(std::log2(double(p)));
  if (op == "allreduce") return 2 * (p - 1) * a + 2.0 * (p - 1) / p * bytes * b;
  if (op == "allgather") return (p - 1) * a + (p - 1) * bytes * b;
  if (op == "allgatherv") return 2 * (p - 1) * a + (p - 1) * bytes * b;
  if (op == "broadcast") return log2p * a + bytes * b;
  return a + bytes * b;  // sendrecv
}

std::vector<TimedSample> samples(const std::string& op, int p, double a, double b,
                                 std::mt19937* noise = nullptr, double spread = 0) {
  std::uniform_real_distribution<double> u(1 - spread, 1 + spread);
  std::vector<TimedSample> out;
  for (double s : kSizes) {
    TimedSample t = collective_terms(op, p, s);
    t.seconds = oracle_seconds(op, p, s, a, b) * (noise ? u(*noise) : 1.0);
    out.push_back(t);
  }
  return out;
}

TEST(AlphaBetaFit, RecoversAlphaAndBetaExactlyOnEveryCollectiveForm) {
  // A 1 Gb/s link with 50 µs latency, and a 100 Gb/s one with 2 µs.
  for (auto [a, b] : {std::pair{50e-6, 8e-9}, std::pair{2e-6, 8e-11}})
    for (const auto& op : calibrated_collectives())
      for (int p : kWorlds) {
        const AlphaBetaFit f = fit_alpha_beta(samples(op, p, a, b));
        EXPECT_NEAR(f.alpha, a, 1e-9 * a) << op << " P=" << p;
        EXPECT_NEAR(f.beta, b, 1e-9 * b) << op << " P=" << p;
        EXPECT_FALSE(f.bounded);
      }
}

// Stated tolerance: with every time scaled by an independent factor uniform in [0.95, 1.05],
// α and β come back within 10% (over 20 seeds, every op and P).
TEST(AlphaBetaFit, RecoversWithinTenPercentUnderFivePercentNoise) {
  const double a = 50e-6, b = 8e-9;
  double worst_a = 0, worst_b = 0;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    for (const auto& op : calibrated_collectives())
      for (int p : kWorlds) {
        const AlphaBetaFit f = fit_alpha_beta(samples(op, p, a, b, &rng, 0.05));
        worst_a = std::max(worst_a, std::fabs(f.alpha / a - 1));
        worst_b = std::max(worst_b, std::fabs(f.beta / b - 1));
      }
  }
  EXPECT_LT(worst_a, 0.10);
  EXPECT_LT(worst_b, 0.10);
  EXPECT_GT(worst_b, 0);  // the noise did reach the fit
}

TEST(AlphaBetaFit, NegativeOptimumIsBoundedAtZero) {
  // Times that fall with size: the free fit's β would be negative.
  std::vector<TimedSample> s = {{2, 1000, 10e-6}, {2, 2000, 9e-6}, {2, 4000, 8e-6}};
  const AlphaBetaFit f = fit_alpha_beta(s);
  EXPECT_TRUE(f.bounded);
  EXPECT_EQ(f.beta, 0);
  EXPECT_GT(f.alpha, 0);
  EXPECT_THROW(fit_alpha_beta({}), std::invalid_argument);
}

TEST(CalibratedProfile, FitsEachCollectiveAndPAndDefaultsToTheLargestAllreduce) {
  std::vector<CollectiveTiming> t;
  auto add = [&](const std::string& op, int p, double a, double b) {
    for (double s : kSizes) t.push_back({op, p, s, oracle_seconds(op, p, s, a, b)});
  };
  add("allreduce", 2, 40e-6, 8e-9);
  add("allreduce", 4, 60e-6, 9e-9);
  add("allgather", 2, 30e-6, 7e-9);
  add("sendrecv", 2, 20e-6, 8.5e-9);
  const NetworkProfile p = fit_network_profile(t, "vc", "a test");
  EXPECT_EQ(p.name, "vc");
  EXPECT_EQ(p.provenance(), "calibrated (measured on a test)");
  ASSERT_EQ(p.collectives.size(), 3u);
  EXPECT_NEAR(p.collectives.at("allreduce").at(4).alpha, 60e-6, 1e-15);
  EXPECT_NEAR(p.collectives.at("allgather").at(2).beta, 7e-9, 1e-18);
  EXPECT_NEAR(p.alpha, 60e-6, 1e-15);  // allreduce at P = 4
  EXPECT_NEAR(p.beta, 9e-9, 1e-18);
  t.push_back({"broadcast", 2, 4096, 1e-5});  // one size: no fit
  EXPECT_THROW(fit_network_profile(t, "vc", ""), std::invalid_argument);
}

TEST(CalibratedProfile, LookupTakesTheNearestPAndFallsBackToTheDefault) {
  NetworkProfile p{"x", 1, 2};
  p.collectives["allreduce"] = {{2, {10, 20}}, {8, {30, 40}}};
  p.collectives["sendrecv"] = {{2, {5, 6}}};
  EXPECT_EQ(p.fit_for("allreduce", 2).alpha, 10);
  EXPECT_EQ(p.fit_for("allreduce", 4).alpha, 10);  // |4-2| < |4-8|
  EXPECT_EQ(p.fit_for("allreduce", 5).alpha, 30);  // a tie: the larger P
  EXPECT_EQ(p.fit_for("allreduce", 256).alpha, 30);
  EXPECT_EQ(p.fit_for("send", 16).beta, 6);       // sends use the sendrecv fit
  EXPECT_EQ(p.fit_for("broadcast", 2).alpha, 1);  // not calibrated: the default
  EXPECT_EQ(p.fit_for("barrier", 2).beta, 2);
  EXPECT_DOUBLE_EQ(p.cost("allreduce", 8, 14, 1000), 30 * 14 + 40 * 1000);
  EXPECT_EQ(find_network_profile("1gbe").provenance(), "nominal (assumed)");
}

std::string write(const std::string& name, const std::string& text) {
  auto path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(NetworkProfileFile, OldFormatLoadsUnchanged) {
  const auto path = write("old_nets.yaml",
                          "networks:\n  - {name: wan, alpha: 1.0e-3, bandwidth_gbps: 0.1}\n"
                          "  - {name: nvlink, alpha: 2.0e-6, beta: 3.0e-12}\n");
  const auto ps = load_network_profiles(path);
  ASSERT_EQ(ps.size(), 2u);
  for (const auto& p : ps) {
    EXPECT_TRUE(p.collectives.empty());
    EXPECT_TRUE(p.measured_on.empty());
    EXPECT_EQ(p.provenance(), "nominal (assumed)");
  }
  EXPECT_DOUBLE_EQ(ps[0].cost("allreduce", 4, 6, 1e6), 6 * 1e-3 + 1e6 * 8.0 / 0.1e9);
}

TEST(NetworkProfileFile, PerCollectiveProfileRoundTrips) {
  NetworkProfile a{"vc-1gbit", 5.0e-5, 8.0e-9};
  a.measured_on = "virtual cluster 2x1, tbf 1gbit, \"quoted\"";
  a.collectives["allreduce"] = {{2, {4.1e-5, 8.3e-9}}, {4, {1.0 / 3e4, 8.6e-9}}};
  a.collectives["allgatherv"] = {{2, {0, 1e-9 / 7}}};
  NetworkProfile b{"plain", 1e-6, 1e-10};
  const auto path = std::filesystem::path(::testing::TempDir()) / "round.yaml";
  write_network_profiles(path.string(), {a, b});
  const auto back = load_network_profiles(path.string());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, a.name);
  EXPECT_EQ(back[0].measured_on, a.measured_on);
  // Numbers keep 15 significant digits (as every configuration value does).
  EXPECT_NEAR(back[0].alpha, a.alpha, 1e-14 * a.alpha);
  EXPECT_NEAR(back[0].beta, a.beta, 1e-14 * a.beta);
  ASSERT_EQ(back[0].collectives.size(), 2u);
  for (const auto& [op, fits] : a.collectives)
    for (const auto& [p, f] : fits) {
      EXPECT_NEAR(back[0].collectives.at(op).at(p).alpha, f.alpha, 1e-14 * f.alpha) << op << p;
      EXPECT_NEAR(back[0].collectives.at(op).at(p).beta, f.beta, 1e-14 * f.beta) << op << p;
    }
  // What was read writes the same file, bit for bit.
  const auto again = std::filesystem::path(::testing::TempDir()) / "round_again.yaml";
  write_network_profiles(again.string(), back);
  auto text = [](const std::filesystem::path& f) {
    std::ifstream in(f);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(text(again), text(path));
  EXPECT_TRUE(back[1].collectives.empty());
  EXPECT_EQ(back[1].provenance(), "nominal (assumed)");
}

TEST(NetworkProfileFile, BadCollectiveEntriesNameFileLineColumnAndKey) {
  const std::string head =
      "networks:\n  - name: vc\n    alpha: 1.0e-5\n    beta: 1.0e-9\n"
      "    collectives:\n";
  auto expect_error = [&](const std::string& body, const std::string& place,
                          const std::string& needle) {
    const auto path = write("bad_calibrated.yaml", head + body);
    try {
      load_network_profiles(path);
      FAIL() << body;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path + ":" + place), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  expect_error("      alltoall: {2: {alpha: 1.0e-5, beta: 1.0e-9}}\n", "6:7", "alltoall");
  expect_error("      allreduce: {two: {alpha: 1.0e-5, beta: 1.0e-9}}\n", "6:19", "allreduce.two");
  expect_error("      allreduce: {1: {alpha: 1.0e-5, beta: 1.0e-9}}\n", "6:19", "P >= 2");
  expect_error("      allreduce:\n        2: {alpha: 1.0e-5}\n", "7:12", "'alpha' and 'beta'");
  expect_error("      allreduce:\n        2: {alpha: -1.0e-5, beta: 1.0e-9}\n", "7:", "alpha");
  expect_error("      allreduce:\n        2: {alpha: 1.0e-5, beta: 1.0e-9, gamma: 1}\n",
               "7:", "gamma");
  expect_error("      allreduce: 3\n", "6:18", "expected a mapping");
}

}  // namespace
}  // namespace cedar
