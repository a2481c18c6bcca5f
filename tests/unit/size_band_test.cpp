// Size bands of a calibrated fit (comm/network_model.h): the band a message takes, the fit per band
// recovering two regimes made by hand from synthetic timings, the refusals of bands that cannot be
// fitted, and the profile file's `bands:` list (round trip, bad entries named).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "comm/calibrated_profile.h"
#include "comm/network_model.h"
#include "comm/network_profile_file.h"
#include "config/params.h"

namespace cedar {
namespace {

NetworkProfile banded() {
  NetworkProfile p{"x", 1, 2};
  p.collectives["allreduce"] = {{2, {10, 20}}, {8, {30, 40}}};
  p.size_bands["allreduce"][8] = {{0, {100, 200}}, {1000, {300, 400}}, {5000, {500, 600}}};
  p.collectives["sendrecv"] = {{2, {5, 6}}};
  return p;
}

TEST(SizeBands, AMessageTakesTheBandThatHoldsIt) {
  const NetworkProfile p = banded();
  EXPECT_EQ(p.fit_for("allreduce", 8, 0).alpha, 100);
  EXPECT_EQ(p.fit_for("allreduce", 8, 999).alpha, 100);
  EXPECT_EQ(p.fit_for("allreduce", 8, 1000).alpha, 300);  // a band starts at its from_bytes
  EXPECT_EQ(p.fit_for("allreduce", 8, 4999.5).beta, 400);
  EXPECT_EQ(p.fit_for("allreduce", 8, 1e12).beta, 600);   // the last band reaches every size
  EXPECT_EQ(p.fit_for("allreduce", 6, 2000).alpha, 300);  // P = 8 is the nearest fit
  // Without bands at the nearest P, or for the op, the fit over every size; no size: the same.
  EXPECT_EQ(p.fit_for("allreduce", 2, 2000).alpha, 10);
  EXPECT_EQ(p.fit_for("send", 2, 2000).beta, 6);
  EXPECT_EQ(p.fit_for("allreduce", 8).alpha, 30);
  EXPECT_EQ(p.fit_for("broadcast", 8, 2000).alpha, 1);  // not calibrated: the default
  EXPECT_DOUBLE_EQ(p.cost("allreduce", 8, 14, 1e6, 6000), 500 * 14 + 600 * 1e6);
  EXPECT_DOUBLE_EQ(p.cost("allreduce", 8, 14, 1e6), 30 * 14 + 40 * 1e6);
}

// Allreduce on P ranks written out by hand: 2(P-1) α + 2(P-1)/P S β.
double allreduce_seconds(int p, double bytes, double a, double b) {
  return 2 * (p - 1) * a + 2.0 * (p - 1) / p * bytes * b;
}

std::vector<CollectiveTiming> two_regimes() {
  // 50 µs and 10 ns/B up to 1 MiB; from 8 MiB on, 200 µs and 20 ns/B.
  std::vector<CollectiveTiming> t;
  for (double s : {4096.0, 65536.0, 1048576.0})
    t.push_back({"allreduce", 4, s, allreduce_seconds(4, s, 50e-6, 10e-9)});
  for (double s : {8388608.0, 16777216.0, 33554432.0})
    t.push_back({"allreduce", 4, s, allreduce_seconds(4, s, 200e-6, 20e-9)});
  return t;
}

TEST(SizeBands, AFitPerBandRecoversEachRegime) {
  const NetworkProfile p = fit_network_profile(two_regimes(), "vc", "a test", {4194304});
  const std::vector<SizeBand>& bands = p.size_bands.at("allreduce").at(4);
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].from_bytes, 0);
  EXPECT_EQ(bands[1].from_bytes, 4194304);
  EXPECT_NEAR(bands[0].fit.alpha, 50e-6, 1e-12);
  EXPECT_NEAR(bands[0].fit.beta, 10e-9, 1e-15);
  EXPECT_NEAR(bands[1].fit.alpha, 200e-6, 1e-11);
  EXPECT_NEAR(bands[1].fit.beta, 20e-9, 1e-15);
  // The fit over every size is neither regime, and a profile fitted without edges has no bands.
  EXPECT_GT(std::abs(p.collectives.at("allreduce").at(4).beta - 20e-9), 1e-10);
  EXPECT_TRUE(fit_network_profile(two_regimes(), "vc", "").size_bands.empty());
}

TEST(SizeBands, ABandWithoutTimingsIsLeftToTheBandBelow) {
  // Edges at 2 MiB (nothing from 2 to 4 MiB: left out), 4 MiB (8-32 MiB) and 64 MiB (nothing
  // above: left out).
  const NetworkProfile p =
      fit_network_profile(two_regimes(), "vc", "", {2097152, 4194304, 67108864});
  const std::vector<SizeBand>& bands = p.size_bands.at("allreduce").at(4);
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[1].from_bytes, 4194304);
  EXPECT_NEAR(bands[1].fit.beta, 20e-9, 1e-15);
  // Nothing below the first edge: the lowest band fitted starts at 0.
  const NetworkProfile high = fit_network_profile(two_regimes(), "vc", "", {1024, 4194304});
  EXPECT_EQ(high.size_bands.at("allreduce").at(4).front().from_bytes, 0);
  EXPECT_NEAR(high.size_bands.at("allreduce").at(4).front().fit.beta, 10e-9, 1e-15);
}

TEST(SizeBands, BandsThatCannotBeFittedAreRefusedNamingThem) {
  auto refusal = [](const std::vector<double>& edges) {
    try {
      fit_network_profile(two_regimes(), "vc", "", edges);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(refusal({65536}).find("allreduce at P = 4: the band below 64 KiB has 1 size"),
            std::string::npos)
      << refusal({65536});
  EXPECT_NE(refusal({1048576, 8388608}).find("the band from 1 MiB below 8 MiB has 1 size"),
            std::string::npos);
  EXPECT_NE(refusal({33554432}).find("the band from 32 MiB on has 1 size"), std::string::npos);
  EXPECT_NE(refusal({8388608, 1048576}).find("increase, not 1 MiB after 8 MiB"), std::string::npos);
  EXPECT_NE(refusal({0}).find("above 0"), std::string::npos);
}

std::string write(const std::string& name, const std::string& text) {
  auto path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(SizeBands, TheProfileFileKeepsThemAndWritesWhatItRead) {
  NetworkProfile a = banded();
  a.name = "vc-banded";
  a.measured_on = "a test";
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "bands.yaml").string();
  write_network_profiles(path, {a});
  const std::vector<NetworkProfile> back = load_network_profiles(path);
  ASSERT_EQ(back.size(), 1u);
  ASSERT_EQ(back[0].size_bands.size(), 1u);
  const std::vector<SizeBand>& bands = back[0].size_bands.at("allreduce").at(8);
  ASSERT_EQ(bands.size(), 3u);
  for (size_t i = 0; i < bands.size(); ++i) {
    const SizeBand& want = a.size_bands.at("allreduce").at(8)[i];
    EXPECT_EQ(bands[i].from_bytes, want.from_bytes);
    EXPECT_EQ(bands[i].fit.alpha, want.fit.alpha);
    EXPECT_EQ(bands[i].fit.beta, want.fit.beta);
  }
  EXPECT_FALSE(back[0].size_bands.at("allreduce").count(2));
  EXPECT_EQ(back[0].collectives.at("allreduce").at(8).alpha, 30);
  const std::string again =
      (std::filesystem::path(::testing::TempDir()) / "bands_again.yaml").string();
  write_network_profiles(again, back);
  EXPECT_EQ(text_of(again), text_of(path));
}

TEST(SizeBands, BadBandEntriesNameFileLineAndKey) {
  const std::string head =
      "networks:\n  - name: vc\n    alpha: 1.0e-5\n    beta: 1.0e-9\n"
      "    collectives:\n      allreduce:\n";
  auto expect_error = [&](const std::string& body, const std::string& place,
                          const std::string& needle) {
    const auto path = write("bad_bands.yaml", head + body);
    try {
      load_network_profiles(path);
      ADD_FAILURE() << body;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path + ":" + place), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  const std::string fit = "        2: {alpha: 1.0e-5, beta: 1.0e-9, bands: ";
  expect_error(fit + "[{from_bytes: 10, alpha: 1.0e-5, beta: 1.0e-9}]}\n",
               "7:", "allreduce.2.bands[0].from_bytes: the first band starts at 0, not 10");
  expect_error(fit +
                   "[{from_bytes: 0, alpha: 1.0e-5, beta: 1.0e-9}, {from_bytes: 0, alpha: 1.0e-5, "
                   "beta: 1.0e-9}]}\n",
               "7:", "bands[1].from_bytes: 0 is not above the band before it");
  expect_error(fit + "[{from_bytes: 0, alpha: 1.0e-5}]}\n",
               "7:", "bands[0]: 'from_bytes', 'alpha' and 'beta' are required");
  expect_error(fit + "[{from_bytes: 0, alpha: 1.0e-5, beta: -1.0e-9}]}\n", "7:", "beta");
  expect_error(fit + "[]}\n", "7:", "expected a list of {from_bytes, alpha, beta}, not an empty");
  expect_error(fit + "3}\n", "7:", "expected a list of {from_bytes, alpha, beta}, not a scalar");
}

}  // namespace
}  // namespace cedar
