// A profile fitted in segments between the sizes timed (comm/calibrated_profile.h): every size
// timed priced at its mean time, sizes between two on the straight line between them, beyond the
// largest on the last segment; the first segment kept to α, β >= 0; the profile file keeping a
// segment's negative α and refusing one that prices its band at no time; the held-out check
// (comm/held_out_timings.h). The expected seconds are written out by hand from the timings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "comm/calibrated_profile.h"
#include "comm/held_out_timings.h"
#include "comm/network_model.h"
#include "comm/network_profile_file.h"
#include "config/params.h"

namespace cedar {
namespace {

constexpr double KiB = 1024, MiB = 1024 * 1024;

// An allreduce on 4 ranks: 6 latency steps and 1.5 S bus bytes (comm/network_model.h).
double allreduce_price(const NetworkProfile& p, double bytes) {
  return p.cost("allreduce", 4, 6, 1.5 * bytes, bytes);
}

// Times that grow faster than the bytes from 1 to 4 MiB (a segment with α < 0) and two
// calibrations at 64 KiB (3 and 5 ms: their mean, 4 ms, is the size's time).
std::vector<CollectiveTiming> timed() {
  return {{"allreduce", 4, 4 * KiB, 0.001},
          {"allreduce", 4, 64 * KiB, 0.003},
          {"allreduce", 4, 1 * MiB, 0.040},
          {"allreduce", 4, 4 * MiB, 0.200},
          {"allreduce", 4, 64 * KiB, 0.005}};
}

TEST(SizeSegments, EverySizeTimedIsPricedAtItsMeanTime) {
  const NetworkProfile p = fit_network_profile_segments(timed(), "vc", "a test");
  EXPECT_NEAR(allreduce_price(p, 4 * KiB), 0.001, 1e-12);
  EXPECT_NEAR(allreduce_price(p, 64 * KiB), 0.004, 1e-12);
  EXPECT_NEAR(allreduce_price(p, 1 * MiB), 0.040, 1e-12);
  EXPECT_NEAR(allreduce_price(p, 4 * MiB), 0.200, 1e-12);
  // Halfway between 1 and 4 MiB: halfway between their times; beyond 4 MiB, the same line on.
  EXPECT_NEAR(allreduce_price(p, 2.5 * MiB), 0.120, 1e-12);
  EXPECT_NEAR(allreduce_price(p, 8 * MiB), 0.200 + 0.160 / 3 * 4, 1e-12);
  // A band from each size but the largest; the first from 0.
  const std::vector<SizeBand>& bands = p.size_bands.at("allreduce").at(4);
  ASSERT_EQ(bands.size(), 3u);
  EXPECT_EQ(bands[0].from_bytes, 0);
  EXPECT_EQ(bands[1].from_bytes, 64 * KiB);
  EXPECT_EQ(bands[2].from_bytes, 1 * MiB);
  EXPECT_LT(bands[2].fit.alpha, 0);  // 40 -> 200 ms for 4x the bytes
  // The fit over every size is kept beside them.
  EXPECT_TRUE(p.collectives.at("allreduce").count(4));
}

TEST(SizeSegments, TheFirstSegmentAndAFallingTimeKeepAlphaAndBetaAtOrAboveZero) {
  // 1 -> 20 ms for 16x the bytes: the line through both would be negative near 0 bytes.
  // 20 -> 15 ms from 64 KiB to 256 KiB: time falling with size.
  const std::vector<CollectiveTiming> t = {{"allreduce", 4, 4 * KiB, 0.001},
                                           {"allreduce", 4, 64 * KiB, 0.020},
                                           {"allreduce", 4, 256 * KiB, 0.015},
                                           {"allreduce", 4, 1 * MiB, 0.060}};
  const NetworkProfile p = fit_network_profile_segments(t, "vc", "");
  const std::vector<SizeBand>& bands = p.size_bands.at("allreduce").at(4);
  ASSERT_EQ(bands.size(), 3u);
  for (int i : {0, 1}) {
    EXPECT_GE(bands[i].fit.alpha, 0) << i;
    EXPECT_GE(bands[i].fit.beta, 0) << i;
  }
  EXPECT_GE(allreduce_price(p, 0), 0);
  // The third passes through both its sizes again.
  EXPECT_NEAR(allreduce_price(p, 256 * KiB), 0.015, 1e-12);
  EXPECT_NEAR(allreduce_price(p, 1 * MiB), 0.060, 1e-12);
}

std::string path_of(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(SizeSegments, TheProfileFileKeepsANegativeAlphaAboveTheFirstBand) {
  const NetworkProfile p = fit_network_profile_segments(timed(), "vc-seg", "a test");
  const std::string path = path_of("segments.yaml");
  write_network_profiles(path, {p});
  const std::vector<NetworkProfile> back = load_network_profiles(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_LT(back[0].size_bands.at("allreduce").at(4)[2].fit.alpha, 0);
  EXPECT_NEAR(allreduce_price(back[0], 2.5 * MiB), 0.120, 1e-12);
  const std::string again = path_of("segments_again.yaml");
  write_network_profiles(again, back);
  EXPECT_EQ(text_of(again), text_of(path));
}

TEST(SizeSegments, ANegativeAlphaThatPricesItsBandAtNoTimeIsRefused) {
  const std::string head =
      "networks:\n  - name: vc\n    alpha: 1.0e-5\n    beta: 1.0e-9\n"
      "    collectives:\n      allreduce:\n"
      "        4: {alpha: 1.0e-5, beta: 1.0e-9, bands: [{from_bytes: 0, alpha: ";
  auto error_of = [&](const std::string& body) {
    const std::string path = path_of("bad_segments.yaml");
    std::ofstream(path) << head + body;
    try {
      load_network_profiles(path);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // In the first band, which reaches 0 bytes.
  EXPECT_NE(error_of("-1.0e-5, beta: 1.0e-9}]}\n")
                .find("allreduce.4.bands[0].alpha: -1.0e-5 is below 0 in the first band"),
            std::string::npos)
      << error_of("-1.0e-5, beta: 1.0e-9}]}\n");
  // From 1 MiB: 6 α + 1.5 MiB β = -6e-3 + 1.57e-3 < 0.
  const std::string second =
      "1.0e-5, beta: 1.0e-9}, {from_bytes: 1048576, alpha: -1.0e-3, "
      "beta: 1.0e-9}]}\n";
  EXPECT_NE(error_of(second).find("bands[1].alpha: -1.0e-3 prices the band's smallest message (1 "
                                  "MiB) at no time or less"),
            std::string::npos)
      << error_of(second);
  // 6 α + 1.5 MiB β = -6e-6 + 1.57e-3 > 0: kept.
  EXPECT_EQ(error_of("1.0e-5, beta: 1.0e-9}, {from_bytes: 1048576, alpha: -1.0e-6, "
                     "beta: 1.0e-9}]}\n"),
            "no error");
}

TEST(SizeSegments, HeldOutSizesArePricedOnTheProfileNotFittedOnThem) {
  const NetworkProfile p = fit_network_profile_segments(timed(), "vc", "");
  const std::vector<HeldOutPrice> prices =
      price_held_out(p, {{"allreduce", 4, 2.5 * MiB, 0.100}, {"allreduce", 4, 1 * MiB, 0.050}});
  ASSERT_EQ(prices.size(), 2u);
  EXPECT_NEAR(prices[0].modeled, 0.120, 1e-12);
  EXPECT_NEAR(prices[0].relative_error(), 0.2, 1e-9);
  EXPECT_NEAR(prices[1].modeled, 0.040, 1e-12);
  EXPECT_NEAR(prices[1].relative_error(), -0.2, 1e-9);
  try {
    price_held_out(p, {{"allreduce", 8, 1 * MiB, 0.05}});
    ADD_FAILURE() << "a timing at a P the profile has no fit at was priced";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce at P = 8: the profile 'vc' has no fit"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cedar
