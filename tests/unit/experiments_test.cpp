// Every experiment file in experiments/ expands, and every model, dataset and algorithm it names
// resolves with valid parameters; the reproduction suites run what their comments state.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "config/experiment_config.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "reports/claims.h"
#include "runner/suite/suite.h"

namespace cedar {
namespace {

// What `cedar suite` expands `algorithm: {every: registered}` to.
const RegisteredAlgorithms& registered() {
  static const RegisteredAlgorithms r{gradient_algorithm_names()};
  return r;
}

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
    ASSERT_NO_THROW(suite = expand_suite(path, registered())) << path;
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
      EXPECT_TRUE(found) << path << ": claim '" << claim.text << "' names no run '" << claim.run
                         << "'";
      // A verdict says where the paper measured the claim.
      EXPECT_FALSE(claim.setting.empty())
          << path << ": claim '" << claim.text << "' names no setting";
      bool base = claim.baseline.empty();
      for (const auto& r : suite.runs) base = base || r.name == claim.baseline;
      EXPECT_TRUE(base) << path << ": claim '" << claim.text << "' names no run '" << claim.baseline
                        << "'";
    }
  }
  EXPECT_GE(files, 1);
  EXPECT_GE(runs, 1);
}

// The quick demo runs every registered algorithm that exchanges gradients (the parameter server:
// experiments/parameter_server.yaml), once each, in catalog order.
TEST(Experiments, QuickSuiteRunsEveryRegisteredAlgorithm) {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  Suite quick = expand_suite(std::string(src) + "/experiments/quick.yaml", registered());
  std::vector<std::string> algorithms;
  for (const auto& r : quick.runs)
    algorithms.push_back(load_experiment(quick.file, r.overrides).algorithm);
  EXPECT_EQ(algorithms, gradient_algorithm_names());
}

// `algorithm: {every: registered, settings: ...}` stands for one list entry per registered name,
// in the order given: the settings' keys beside the name, `set:` applied to that run alone, a bare
// name where an algorithm has no settings or empty ones.
TEST(Experiments, EveryRegisteredExpandsToOneEntryPerNameWithItsSettings) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "every.yaml";
  std::ofstream(path) << "name: every\nmodel: {name: lenet5}\ndata: {name: synthetic}\n"
                         "algorithm: {name: dense}\n"
                         "grid:\n  algorithm:\n    every: registered\n    settings:\n"
                         "      topk: {ratio: 0.05, set: {optimizer.lr: 0.01}}\n"
                         "      qsgd: {}\n";
  const Suite suite = expand_suite(path.string(), {{"qsgd", "topk", "dense"}});
  ASSERT_EQ(suite.runs.size(), 3u);
  EXPECT_EQ(suite.runs[0].name, "qsgd");
  EXPECT_EQ(suite.runs[0].overrides.front(), "algorithm=qsgd");
  EXPECT_EQ(suite.runs[1].name, "topk");
  EXPECT_EQ(suite.runs[1].overrides[0], "algorithm={name: topk, ratio: 0.05}");
  EXPECT_EQ(suite.runs[1].overrides[1], "optimizer.lr=0.01");
  EXPECT_EQ(suite.runs[2].overrides.front(), "algorithm=dense");
  const ExperimentConfig topk = load_experiment(suite.file, suite.runs[1].overrides);
  EXPECT_EQ(topk.algorithm, "topk");
  EXPECT_DOUBLE_EQ(topk.optimizer.lr, 0.01);
  EXPECT_DOUBLE_EQ(topk.algorithm_params["ratio"].as<double>(), 0.05);
  EXPECT_NE(load_experiment(suite.file, suite.runs[2].overrides).optimizer.lr, 0.01);
}

// Runs of `file` (in experiments/) with their resolved configurations, in grid order.
std::vector<std::pair<std::string, ExperimentConfig>> suite_configs(const std::string& file) {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  if (!src) throw std::runtime_error("run through ctest (CEDAR_SOURCE_DIR)");
  Suite suite = expand_suite(std::string(src) + "/experiments/" + file, registered());
  std::vector<std::pair<std::string, ExperimentConfig>> out;
  for (const auto& r : suite.runs)
    out.emplace_back(r.name, load_experiment(suite.file, r.overrides));
  return out;
}

// The reproduction suites: the runs `cedar suite FILE --dry-run` lists, unique names, a claims:
// section whose every claim cites its source, and the suite named after its file.
TEST(Experiments, ReproductionSuitesExpandToTheirRunsAndClaims) {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  // cifar10_resnet20 runs every registered algorithm that exchanges gradients.
  const std::map<std::string, size_t> expected_runs = {
      {"cifar10_resnet20.yaml", registered().names.size()},
      {"vgg16_dgc.yaml", 2},
      {"lars_batch.yaml", 4},
      {"local_sgd_period.yaml", 5},
      {"powersgd.yaml", 4}};
  for (const auto& [file, count] : expected_runs) {
    const std::string path = std::string(src) + "/experiments/" + file;
    Suite suite;
    ASSERT_NO_THROW(suite = expand_suite(path, registered())) << path;
    EXPECT_EQ(suite.runs.size(), count) << path;
    EXPECT_EQ(suite.name + ".yaml", file);
    std::set<std::string> names;
    for (const auto& r : suite.runs)
      EXPECT_TRUE(names.insert(r.name).second) << path << ": duplicate run " << r.name;
    auto claims = load_claims(path);
    EXPECT_GE(claims.size(), 2u) << path;
    for (const auto& c : claims)
      EXPECT_FALSE(c.source.empty()) << path << ": claim '" << c.text << "' cites no source";
    for (const auto& r : suite.runs)
      EXPECT_EQ(load_experiment(path, r.overrides).data.name, "cifar10") << path << ": " << r.name;
  }
}

// The surveys' synchronous axes on real data: each new exchange, top-k (gTop-k's baseline) and
// dense SGD at 4 and 8 ranks, hierarchical in nodes of 2, every claim citing its source.
TEST(Experiments, SurveyAxesRunEachExchangeAtFourAndEightRanks) {
  std::set<std::string> runs;
  for (const auto& [name, c] : suite_configs("survey_axes.yaml")) {
    runs.insert(name);
    EXPECT_EQ(name.rfind(c.algorithm + "/np", 0), 0u) << name;
    EXPECT_EQ(c.data.name, "fashion-mnist") << name;
  }
  std::set<std::string> expected;
  for (const char* a : {"dense", "topk", "gtopk", "dpsgd", "choco-sgd", "hierarchical"})
    for (int p : {4, 8}) expected.insert(std::string(a) + "/np" + std::to_string(p));
  EXPECT_EQ(runs, expected);
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const auto claims = load_claims(std::string(src) + "/experiments/survey_axes.yaml");
  EXPECT_GE(claims.size(), 6u);
  for (const auto& c : claims) {
    EXPECT_FALSE(c.source.empty()) << "claim '" << c.text << "' cites no source";
    EXPECT_TRUE(runs.count(c.run)) << "claim '" << c.text << "' names no run of the suite";
  }
}

// The parameter-server suite: each mode and LAG on the server at 4 and 5 ranks, and ssp and asp
// on two servers, against dense SGD, every claim citing its source and naming a run of the
// suite, its baseline too.
TEST(Experiments, ParameterServerSuiteRunsEachModeAgainstDense) {
  std::set<std::string> runs;
  for (const auto& [name, c] : suite_configs("parameter_server.yaml")) {
    runs.insert(name);
    EXPECT_EQ(c.data.name, "fashion-mnist") << name;
    if (name.rfind("ps-", 0) == 0) {
      EXPECT_EQ(c.algorithm, "ps") << name;
    }
  }
  std::set<std::string> expected;
  for (const char* a :
       {"dense", "ps-bsp", "ps-ssp", "ps-asp", "ps-ssp-2s", "ps-asp-2s", "ps-lag", "ps-bsp-plain"})
    for (int p : {4, 5}) expected.insert(std::string(a) + "/np" + std::to_string(p));
  EXPECT_EQ(runs, expected);
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const auto claims = load_claims(std::string(src) + "/experiments/parameter_server.yaml");
  EXPECT_GE(claims.size(), 4u);
  for (const auto& c : claims) {
    EXPECT_FALSE(c.source.empty()) << "claim '" << c.text << "' cites no source";
    EXPECT_TRUE(runs.count(c.run)) << "claim '" << c.text << "' names no run of the suite";
    EXPECT_TRUE(c.baseline.empty() || runs.count(c.baseline)) << c.text;
  }
}

// 1-bit Adam against Adam: arms of five seeds each that differ only in the exchange (the same
// betas and eps, read by 1-bit Adam from its own keys and by AdamW from the optimizer's), a
// negative control frozen after one step and Adam at its usual eps; the accuracy claim against the
// Adam arm with that control, the baseline's own check, and byte claims that follow from the
// format.
TEST(Experiments, OnebitAdamSuiteComparesWithAdamOnFiveSeeds) {
  std::map<std::string, std::set<uint64_t>> seeds;
  for (const auto& [name, c] : suite_configs("onebit_adam.yaml")) {
    seeds[name].insert(c.train.seed);
    if (name == "adam" || name == "adam-eps1e-8") {
      EXPECT_EQ(c.algorithm, "dense") << name;
      EXPECT_EQ(c.optimizer.name, "adamw") << name;
      EXPECT_DOUBLE_EQ(c.optimizer.eps, name == "adam" ? 1e-3 : 1e-8) << name;
    } else {
      EXPECT_EQ(c.algorithm, "onebit-adam") << name;
      EXPECT_EQ(c.optimizer.name, "sgd") << name;
      EXPECT_DOUBLE_EQ(c.algorithm_params["eps"].as<double>(), 1e-3) << name;
      EXPECT_EQ(c.algorithm_params["freeze_step"].as<int>(), name == "onebit-adam" ? 234 : 1)
          << name;
    }
  }
  const std::set<std::string> arms = {"adam", "adam-eps1e-8", "onebit-adam",
                                      "onebit-adam-nowarmup"};
  std::set<std::string> names;
  for (const auto& [name, s] : seeds) {
    names.insert(name);
    EXPECT_EQ(s.size(), 5u) << name;
  }
  EXPECT_EQ(names, arms);
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const auto claims = load_claims(std::string(src) + "/experiments/onebit_adam.yaml");
  int accounting = 0, findings = 0;
  for (const auto& c : claims) {
    if (c.kind == "accounting") {
      ++accounting;
      EXPECT_EQ(c.run, "onebit-adam") << c.text;
      EXPECT_TRUE(is_byte_metric(c.metric)) << c.text;
      continue;
    }
    ++findings;
    EXPECT_EQ(c.metric, "accuracy_gap") << c.text;
    if (c.run == "onebit-adam") {
      EXPECT_EQ(c.baseline, "adam") << c.text;
      EXPECT_EQ(c.control, "onebit-adam-nowarmup") << c.text;
    } else {
      EXPECT_EQ(c.run, "adam") << c.text;
      EXPECT_EQ(c.baseline, "adam-eps1e-8") << c.text;
    }
  }
  EXPECT_EQ(accounting, 3);
  EXPECT_EQ(findings, 2);
}

// The ImageNet subset: the papers' ImageNet models with their ImageNet stems at Imagenette's 160
// px, each with dense SGD and the core compressors, on 4 ranks.
TEST(Experiments, ImagenetteTrainsTheImageNetModels) {
  std::set<std::string> runs;
  for (const auto& [name, c] : suite_configs("imagenette.yaml")) {
    runs.insert(c.algorithm + "/" + c.model.name);
    EXPECT_EQ(name, c.algorithm + "/" + c.model.name);
    EXPECT_EQ(c.data.name, "imagenet-folder") << name;
    EXPECT_EQ(c.data.image_size, 160) << name;
    EXPECT_FALSE(c.model.small_input) << name;
  }
  std::set<std::string> expected;
  for (const char* a : {"dense", "dgc", "qsgd", "powersgd", "topk"})
    for (const char* m : {"resnet18", "resnet50", "vgg16"})
      expected.insert(std::string(a) + "/" + m);
  EXPECT_EQ(runs, expected);
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const auto claims = load_claims(std::string(src) + "/experiments/imagenette.yaml");
  EXPECT_GE(claims.size(), 5u);
  for (const auto& c : claims) EXPECT_FALSE(c.source.empty()) << c.text;
}

// Seeds vary slowest: a suite stopped part-way holds every run of its first seed, a complete
// comparison, rather than all seeds of its first algorithms.
TEST(Experiments, SuitesRunEveryAlgorithmOfOneSeedBeforeTheNext) {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  Suite suite = expand_suite(std::string(src) + "/experiments/reproduction.yaml", registered());
  ASSERT_EQ(suite.runs.size(), 50u);  // 10 runs, 5 seeds
  for (size_t i = 0; i < suite.runs.size(); ++i) {
    EXPECT_EQ(suite.runs[i].seed, i / 10 + 1) << i << ": " << suite.runs[i].name;
    EXPECT_EQ(suite.runs[i].name, suite.runs[i % 10].name) << i;
  }
}

TEST(Experiments, SweepsVaryWhatTheirPapersVary) {
  std::map<std::string, int64_t> global_batch;
  for (const auto& [name, c] : suite_configs("lars_batch.yaml"))
    global_batch[name + "/" + c.optimizer.name] = c.train.batch_size * 4;
  EXPECT_EQ(global_batch, (std::map<std::string, int64_t>{{"sgd-b128/sgd", 128},
                                                          {"sgd-b1024/sgd", 1024},
                                                          {"lars-b1024/lars", 1024},
                                                          {"lars-b2048/lars", 2048}}));
  std::map<std::string, int> periods;
  for (const auto& [name, c] : suite_configs("local_sgd_period.yaml"))
    if (c.algorithm == "local-sgd") periods[name] = c.algorithm_params["period"].as<int>();
  EXPECT_EQ(periods,
            (std::map<std::string, int>{
                {"local-h1", 1}, {"local-h4", 4}, {"local-h16", 16}, {"post-local-h16", 16}}));
  std::map<std::string, int> ranks;
  for (const auto& [name, c] : suite_configs("powersgd.yaml"))
    if (c.algorithm == "powersgd") ranks[name] = c.algorithm_params["rank"].as<int>();
  EXPECT_EQ(ranks, (std::map<std::string, int>{
                       {"powersgd-r1", 1}, {"powersgd-r2", 2}, {"powersgd-r4", 4}}));
  std::set<std::string> algorithms;
  for (const auto& [name, c] : suite_configs("cifar10_resnet20.yaml")) {
    EXPECT_EQ(c.model.name, "resnet20") << name;
    algorithms.insert(c.algorithm);
  }
  // The parameter server has its own suite (parameter_server.yaml); script runs a user's file.
  for (const auto& a : algorithm_catalog())
    EXPECT_TRUE(algorithms.count(a.name) || !a.exchanges_gradients || !a.runs_from_defaults)
        << "cifar10_resnet20.yaml does not run '" << a.name << "'";
}

}  // namespace
}  // namespace cedar
