// The profiles a run uses: built-in names, or those of network.profiles' file; a name neither
// knows is an error naming its key and the file; what the file held is noted for the record.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "comm/run_network_profiles.h"

namespace cedar {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const ExperimentConfig& cfg) {
  try {
    run_network_profiles(cfg);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(NetworkProfiles, BuiltInNamesWithoutAFile) {
  ExperimentConfig cfg;
  cfg.network.profile = "1gbe";
  cfg.network.intra_profile = "shm";
  const RunNetworkProfiles p = run_network_profiles(cfg);
  EXPECT_EQ(p.inter.name, "1gbe");
  EXPECT_DOUBLE_EQ(p.inter.beta, find_network_profile("1gbe").beta);
  EXPECT_EQ(p.intra.name, "shm");
  EXPECT_EQ(p.note, "");
}

TEST(NetworkProfiles, AFilesProfilesBesideTheBuiltInOnes) {
  ExperimentConfig cfg;
  cfg.network.profiles = write_file(
      "profiles_test.yaml", "networks:\n  - {name: lab, alpha: 1.0e-4, bandwidth_gbps: 0.5}\n");
  cfg.network.profile = "lab";
  cfg.network.intra_profile = "10gbe";
  const RunNetworkProfiles p = run_network_profiles(cfg);
  EXPECT_DOUBLE_EQ(p.inter.alpha, 1.0e-4);
  EXPECT_DOUBLE_EQ(p.inter.beta, 8 / 0.5e9);  // seconds per byte at 0.5 Gb/s
  EXPECT_EQ(p.intra.name, "10gbe");
  EXPECT_EQ(p.note,
            "# network.profiles: " + cfg.network.profiles +
                " held:\n#   networks:\n#     - {name: lab, alpha: 1.0e-4, bandwidth_gbps: 0.5}\n");

  cfg.network.intra_profile = "lan";
  const std::string e = error_of(cfg);
  EXPECT_NE(e.find("network.intra_profile: unknown network profile 'lan'"), std::string::npos) << e;
  EXPECT_NE(e.find("nor in " + cfg.network.profiles), std::string::npos) << e;
}

TEST(NetworkProfiles, AMissingFileIsNamed) {
  ExperimentConfig cfg;
  cfg.network.profiles = ::testing::TempDir() + "no_such_profiles.yaml";
  cfg.network.profile = "lab";
  EXPECT_NE(error_of(cfg).find("network.profiles: " + cfg.network.profiles), std::string::npos)
      << error_of(cfg);
}

}  // namespace
}  // namespace cedar
