// Every experiment file in experiments/ expands, and every model, dataset and algorithm it names
// resolves with valid parameters.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "algorithms/algorithm.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "reports/claims.h"
#include "runner/config.h"
#include "runner/suite.h"

namespace cedar {
namespace {

bool in_models(const std::string& name) {
  for (const auto& m : model_catalog())
    if (m.name == name) return true;
  return false;
}

bool in_datasets(const std::string& name) {
  for (const auto& d : dataset_catalog())
    if (d.name == name) return true;
  return false;
}

TEST(Experiments, EveryNameResolves) {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (CEDAR_SOURCE_DIR)";
  int files = 0, runs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(src) + "/experiments")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    const std::string path = entry.path().string();
    Suite suite;
    ASSERT_NO_THROW(suite = expand_suite(path)) << path;
    for (const auto& r : suite.runs) {
      ++runs;
      ExperimentConfig c = load_experiment(path, r.overrides);
      EXPECT_TRUE(in_models(c.model.name)) << path << ": " << r.name << ": " << c.model.name;
      EXPECT_TRUE(in_datasets(c.data.name)) << path << ": " << r.name << ": " << c.data.name;
      EXPECT_NO_THROW(find_algorithm(c.algorithm).make(c.algorithm_params, c.source, nullptr))
          << path << ": " << r.name;
    }
    // Every claim parses and names a run of its suite.
    std::vector<Claim> claims;
    ASSERT_NO_THROW(claims = load_claims(path)) << path;
    for (const auto& claim : claims) {
      bool found = false;
      for (const auto& r : suite.runs) found = found || r.name == claim.run;
      EXPECT_TRUE(found) << path << ": claim '" << claim.text << "' names no run '" << claim.run << "'";
    }
  }
  EXPECT_GE(files, 1);
  EXPECT_GE(runs, 1);
}

TEST(Experiments, QuickSuiteRunsEveryRegisteredAlgorithm) {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  Suite quick = expand_suite(std::string(src) + "/experiments/quick.yaml");
  for (const auto& a : algorithm_catalog()) {
    bool found = false;
    for (const auto& r : quick.runs) found = found || load_experiment(quick.file, r.overrides).algorithm == a.name;
    EXPECT_TRUE(found) << "experiments/quick.yaml does not run '" << a.name << "'";
  }
}

}  // namespace
}  // namespace cedar
