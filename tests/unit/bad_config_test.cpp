// Hostile configurations: a table of bad experiment files and overrides, each rejected with a
// ConfigError whose message names where (file:line:column or the --set key), the key and the bad
// value. Every row goes through what `cedar suite` validates before it starts anything: the grid
// expansion, every run's configuration, and the algorithm's own parameters.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "runner/config.h"
#include "runner/experiment.h"
#include "runner/suite.h"

namespace cedar {
namespace {

struct BadConfig {
  const char* what;
  std::string yaml;
  std::vector<std::string> overrides;
  // Substrings of the message; "$F" stands for the file's path.
  std::vector<std::string> expect;
};

std::string write_yaml(const std::string& name, const std::string& text) {
  auto path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

// What `cedar suite` checks before launching: the grid, each run's config, its algorithm.
void validate(const std::string& path, const std::vector<std::string>& overrides) {
  Suite suite = expand_suite(path, overrides);
  for (const auto& run : suite.runs) {
    ExperimentConfig c = load_experiment(path, run.overrides);
    find_algorithm(c.algorithm).make(c.algorithm_params, c.source, nullptr);
  }
}

std::string replace_file(std::string s, const std::string& path) {
  for (size_t at; (at = s.find("$F")) != std::string::npos;) s.replace(at, 2, path);
  return s;
}

std::string nested_lists(int depth) {
  return "train: " + std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']') + "\n";
}

const std::vector<BadConfig>& bad_configs() {
  static const std::vector<BadConfig> table = {
      // Names that resolve to nothing.
      {"unknown algorithm", "algorithm: {name: sgd-magic}\n", {},
       {"unknown algorithm 'sgd-magic'", "known: dense, dgc"}},
      {"unknown algorithm, short form", "algorithm: qsgd8\n", {}, {"unknown algorithm 'qsgd8'"}},
      {"unknown optimizer", "optimizer: {name: adam}\n", {},
       {"$F:1:19: optimizer.name: 'adam' is not one of sgd|lars"}},
      {"unknown network profile", "network: {profile: 56k}\n", {},
       {"$F:1:20: network.profile: '56k' is not one of", "10gbe"}},
      {"unknown device", "train: {device: tpu}\n", {}, {"train.device: 'tpu' is not one of cpu|cuda|auto"}},
      {"unknown lr scaling", "optimizer: {lr_scaling: cubic}\n", {}, {"'cubic' is not one of none|linear|sqrt"}},

      // Typos: the key, its place and the keys that would have been right.
      {"typo in an algorithm key", "algorithm:\n  name: dgc\n  sparsty: 0.99\n", {},
       {"$F:3:3: unknown key 'algorithm.sparsty'", "sparsity"}},
      {"typo in a section name", "optimiser:\n  lr: 0.1\n", {},
       {"$F:1:1: unknown key 'optimiser'", "optimizer"}},
      {"typo in a model key", "model: {nmae: resnet20}\n", {}, {"$F:1:9: unknown key 'model.nmae'", "name"}},
      {"typo in a grid key", "grid: {algorithms: [dense]}\n", {}, {"$F:1:8: unknown key 'grid.algorithms'"}},
      {"typo in an override", "train: {epochs: 1}\n", {"train.epoch=3"},
       {"unknown key 'train.epoch'", "epochs"}},

      // Repeated and malformed keys (yaml-cpp would silently keep the first value).
      {"duplicate key", "train:\n  epochs: 2\n  epochs: 3\n", {}, {"$F:3:3: duplicate key 'train.epochs'"}},
      {"duplicate section", "train: {epochs: 1}\ntrain: {epochs: 2}\n", {}, {"$F:2:1: duplicate key 'train'"}},
      {"duplicate algorithm key", "algorithm: {name: dgc, sparsity: 0.9, sparsity: 0.99}\n", {},
       {"$F:1:39: duplicate key 'algorithm.sparsity'"}},
      {"list as a key", "train:\n  ? [a, b]\n  : 1\n", {}, {"$F:2:5: train: keys must be plain names, got a list"}},
      {"null as an algorithm key", "algorithm: {name: dense, ~: 1}\n", {}, {"algorithm: keys must be plain names"}},

      // Learning rate and optimizer ranges.
      {"negative lr from --set", "train: {epochs: 1}\n", {"optimizer.lr=-0.5"},
       {"--set optimizer.lr: optimizer.lr: value -0.5 is out of range (0, inf)"}},
      {"zero lr", "optimizer: {lr: 0}\n", {}, {"$F:1:17: optimizer.lr: value 0 is out of range (0, inf)"}},
      {"infinite lr", "optimizer: {lr: .inf}\n", {}, {"$F:1:17: optimizer.lr: expected a finite number, got '.inf'"}},
      {"NaN momentum", "optimizer: {momentum: .nan}\n", {}, {"optimizer.momentum: expected a finite number"}},
      // 1 - 2^-54 is below 1, but at the 15 digits a run's record keeps it is 1 (and would not reload).
      {"momentum 1 at recorded precision", "optimizer: {momentum: 0.99999999999999994}\n", {},
       {"optimizer.momentum: value 1 is out of range [0, 1)"}},
      {"negative weight decay", "optimizer: {weight_decay: -1e-4}\n", {}, {"optimizer.weight_decay: value -0.0001"}},
      {"warm-up start factor above 1", "optimizer: {warmup_start_factor: 1.5}\n", {},
       {"optimizer.warmup_start_factor: value 1.5 is out of range [0, 1]"}},
      {"negative milestone", "optimizer: {schedule: step, milestones: [2, -1]}\n", {},
       {"$F:1:45: optimizer.milestones: value -1 is out of range [0, inf)"}},
      {"zero poly power", "optimizer: {schedule: poly, poly_power: 0}\n", {}, {"optimizer.poly_power: value 0"}},
      {"LARS trust coefficient 0", "optimizer: {name: lars, trust_coefficient: 0}\n", {},
       {"optimizer.trust_coefficient: value 0 is out of range (0, inf)"}},

      // Sparsification: a sparsity of 1 (or a ratio of 0) sends nothing.
      {"DGC sparsity 1", "algorithm: {name: dgc, sparsity: 1.0}\n", {},
       {"$F:1:34: algorithm.sparsity: value 1 is out of range [0, 1)"}},
      {"DGC sparsity above 1", "algorithm: {name: dgc, sparsity: 1.5}\n", {}, {"algorithm.sparsity: value 1.5"}},
      {"DGC negative sparsity", "algorithm: {name: dgc, sparsity: -0.5}\n", {}, {"algorithm.sparsity: value -0.5"}},
      {"DGC warm-up density 0", "algorithm: {name: dgc, warmup_density: 0}\n", {},
       {"algorithm.warmup_density: value 0 is out of range (0, 1]"}},
      {"DGC sample ratio 0", "algorithm: {name: dgc, sample_ratio: 0}\n", {},
       {"algorithm.sample_ratio: value 0 is out of range [0.001, 1]"}},
      {"top-k ratio 0", "algorithm: {name: topk, ratio: 0}\n", {}, {"algorithm.ratio: value 0 is out of range (0, 1]"}},
      {"top-k ratio above 1", "algorithm: {name: topk, ratio: 1.5}\n", {}, {"algorithm.ratio: value 1.5"}},
      {"random-k negative ratio", "algorithm: {name: randomk, ratio: -0.01}\n", {}, {"algorithm.ratio: value -0.01"}},

      // Quantization.
      {"QSGD zero bits", "algorithm: {name: qsgd, bits: 0}\n", {},
       {"$F:1:31: algorithm.bits: value 0 is out of range [1, 8]"}},
      {"QSGD nine bits", "algorithm: {name: qsgd, bits: 9}\n", {}, {"algorithm.bits: value 9 is out of range [1, 8]"}},
      {"QSGD bits that wrap to 4 in 32 bits", "algorithm: {name: qsgd, bits: 4294967300}\n", {},
       {"algorithm.bits: value 4294967300 does not fit", "2147483647"}},
      {"QSGD bits as a word", "algorithm: {name: qsgd, bits: four}\n", {},
       {"algorithm.bits: expected an integer, got 'four'"}},
      {"QSGD bucket size 0", "algorithm: {name: qsgd, bucket_size: 0}\n", {},
       {"algorithm.bucket_size: value 0 is out of range [1, inf)"}},
      {"QSGD unknown norm", "algorithm: {name: qsgd, norm: l1}\n", {}, {"algorithm.norm: 'l1' is not one of l2|max"}},
      {"signSGD momentum 1", "algorithm: {name: signsgd, momentum: 1}\n", {},
       {"algorithm.momentum: value 1 is out of range [0, 1)"}},
      {"TernGrad negative clip", "algorithm: {name: terngrad, clip: -1}\n", {}, {"algorithm.clip: value -1"}},

      // Low-rank, local and lazy algorithms.
      {"PowerSGD rank 0", "algorithm: {name: powersgd, rank: 0}\n", {}, {"algorithm.rank: value 0 is out of range [1, inf)"}},
      {"local SGD period 0", "algorithm: {name: local-sgd, period: 0}\n", {}, {"algorithm.period: value 0"}},
      {"local SGD switch before -1", "algorithm: {name: local-sgd, post_local_switch_epoch: -2}\n", {},
       {"algorithm.post_local_switch_epoch: value -2 is out of range [-1, inf)"}},
      {"LAG history 0", "algorithm: {name: lag, history: 0}\n", {}, {"algorithm.history: value 0"}},

      // Wrong types.
      {"lr as a word", "optimizer: {lr: fast}\n", {}, {"$F:1:17: optimizer.lr: expected a number, got 'fast'"}},
      {"boolean as a word", "optimizer: {nesterov: maybe}\n", {}, {"optimizer.nesterov: expected true or false, got 'maybe'"}},
      {"milestones as a scalar", "optimizer: {schedule: step, milestones: 3}\n", {},
       {"optimizer.milestones: expected a list of numbers"}},
      {"milestone as a word", "optimizer: {schedule: step, milestones: [1, x]}\n", {},
       {"$F:1:45: optimizer.milestones: expected a number, got 'x'"}},
      {"model name as a list", "model: {name: [resnet20]}\n", {}, {"model.name: expected a string, got a list"}},
      {"section as a list", "train: [1, 2]\n", {}, {"$F:1:8: train: expected a mapping of keys to values"}},
      {"algorithm as a list", "algorithm: [dgc]\n", {}, {"algorithm: expected a name or a mapping with 'name'"}},
      {"algorithm name as a mapping", "algorithm: {name: {x: 1}}\n", {}, {"algorithm.name: expected a string"}},
      {"whole file a list", "- train\n- model\n", {}, {"$F: expected a mapping of sections at the top level"}},
      {"whole file a list, with --set", "- train\n", {"train.epochs=2"}, {"$F: expected a mapping of sections"}},
      {"whole file a scalar", "just words\n", {}, {"$F: expected a mapping of sections"}},

      // Out-of-range training values.
      {"zero epochs", "train: {epochs: 0}\n", {}, {"$F:1:17: train.epochs: value 0 is out of range [1, inf)"}},
      {"negative epochs", "train: {epochs: -1}\n", {}, {"train.epochs: value -1"}},
      {"epochs in exponent form", "train: {epochs: 1e3}\n", {}, {"train.epochs: expected an integer, got '1e3'"}},
      {"epochs beyond 64 bits", "train: {epochs: 99999999999999999999}\n", {},
       {"train.epochs: value 99999999999999999999 does not fit"}},
      {"negative seed", "train: {seed: -1}\n", {}, {"train.seed: value -1 does not fit", "allowed: 0 to"}},
      {"zero batch size", "train: {batch_size: 0}\n", {}, {"train.batch_size: value 0 is out of range [1, inf)"}},
      {"target accuracy above 1", "train: {target_accuracy: 1.5}\n", {}, {"train.target_accuracy: value 1.5"}},
      {"zero bucket size", "train: {bucket_mb: 0}\n", {}, {"train.bucket_mb: value 0 is out of range (0, inf)"}},
      {"negative train limit", "data: {train_limit: -5}\n", {}, {"data.train_limit: value -5"}},

      // Grids (cedar suite) and world sizes.
      {"grid world size 0", "grid: {world_size: [2, 0]}\n", {}, {"$F:1:24: grid.world_size: expected positive integers"}},
      {"grid world size negative", "grid: {world_size: [-4]}\n", {}, {"grid.world_size: expected positive integers"}},
      {"grid world size as a word", "grid: {world_size: [four]}\n", {}, {"grid.world_size: expected positive integers"}},
      {"grid empty list", "grid: {seed: []}\n", {}, {"grid.seed: empty list"}},
      {"grid algorithm without a name", "grid: {algorithm: [{sparsity: 0.9}]}\n", {},
       {"grid.algorithm: each entry is a name or a mapping with 'name'"}},
      {"grid algorithm with a bad parameter", "grid: {algorithm: [dense, {name: qsgd, bits: 0}]}\n", {},
       {"--set algorithm: algorithm.bits: value 0 is out of range [1, 8]"}},

      // Overrides.
      {"override into a scalar", "train: {epochs: 1}\n", {"train.epochs.x=1"}, {"--set train.epochs.x=1", "'epochs' is not a mapping"}},
      {"override value that does not parse", "train: {epochs: 1}\n", {"train.epochs=[1"}, {"--set train.epochs=[1: cannot parse value"}},
      {"override with no value", "train: {epochs: 1}\n", {"train.epochs="},
       {"--set train.epochs: train.epochs: expected an integer, got a null value"}},
      {"override with an empty key part", "train: {epochs: 1}\n", {"train..epochs=1"}, {"empty component in key 'train..epochs'"}},
      {"override without =", "train: {epochs: 1}\n", {"train.epochs"}, {"expected key=value"}},
      {"override replacing a section by a scalar", "train: {epochs: 1}\n", {"train=5"}, {"--set train: train: expected a mapping"}},

      // Syntax.
      {"unclosed flow mapping", "train: {epochs: 1\n", {}, {"$F:", "YAML syntax error"}},
      {"tab indentation", "train:\n\tepochs: 1\n", {}, {"$F:", "YAML syntax error"}},
      {"nesting 5000 deep", nested_lists(5000), {}, {"$F:1:", "YAML syntax error: lists or mappings nested too deeply"}},
  };
  return table;
}

TEST(BadConfig, EveryRowIsRejectedWithItsMessage) {
  int tried = 0;
  for (size_t i = 0; i < bad_configs().size(); ++i) {
    const BadConfig& row = bad_configs()[i];
    const std::string path = write_yaml("bad_config_" + std::to_string(i) + ".yaml", row.yaml);
    std::string message;
    try {
      validate(path, row.overrides);
    } catch (const ConfigError& e) {
      message = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << row.what << ": not a ConfigError: " << e.what();
      continue;
    }
    ++tried;
    if (std::getenv("CEDAR_SHOW_ERRORS") != nullptr) std::printf("  %-40s %s\n", row.what, message.c_str());
    EXPECT_FALSE(message.empty()) << row.what << ": accepted";
    for (const auto& part : row.expect) {
      const std::string want = replace_file(part, path);
      EXPECT_NE(message.find(want), std::string::npos)
          << row.what << ": message '" << message << "' lacks '" << want << "'";
    }
  }
  std::printf("[ info     ] %d bad configurations rejected\n", tried);
}

// The table's rows fail for the reason named, not for another: the same files with the bad
// value replaced are accepted.
TEST(BadConfig, NearbyGoodValuesAreAccepted) {
  const std::vector<std::string> good = {
      "algorithm: {name: dgc, sparsity: 0.999}\n",
      "algorithm: {name: qsgd, bits: 8, bucket_size: 1}\n",
      "algorithm: {name: topk, ratio: 1}\n",
      "algorithm: {name: signsgd, momentum: 0}\n",
      "algorithm: {name: local-sgd, post_local_switch_epoch: -1}\n",
      "optimizer: {schedule: step, milestones: [2, 0]}\n",
      "train: {seed: 18446744073709551615}\n",
      "grid: {world_size: [2, 1], algorithm: [dense, {name: qsgd, bits: 2}]}\n",
  };
  for (size_t i = 0; i < good.size(); ++i) {
    const std::string path = write_yaml("good_config_" + std::to_string(i) + ".yaml", good[i]);
    EXPECT_NO_THROW(validate(path, {})) << good[i];
  }
}

// What only a run can check (names resolved by the registries, the data set's size): `cedar run`
// on synthetic data, one rank. None of the algorithms constrains the world size (signSGD's vote
// ties on an even count give 0 by design) and no option requires divisibility of the batch: the
// one batch constraint is that batch_size x ranks fits in the training set.
TEST(BadConfig, RunTimeChecksNameTheValue) {
  struct Row {
    const char* what;
    std::string yaml;
    std::vector<std::string> expect;
  };
  const std::vector<Row> rows = {
      {"unknown model", "model: {name: resnet21}\ndata: {name: synthetic}\n",
       {"unknown model 'resnet21'", "resnet20", "lenet5"}},
      {"unknown dataset", "model: {name: lenet5}\ndata: {name: cifar11}\n",
       {"unknown dataset 'cifar11'", "cifar10", "synthetic"}},
      {"batch larger than the training set", "model: {name: lenet5}\ndata: {name: synthetic}\ntrain: {batch_size: 5000, threads: 1}\n",
       {"train.batch_size 5000 x 1 ranks exceeds the 2048 training images"}},
      {"LARS with Nesterov momentum", "model: {name: lenet5}\ndata: {name: synthetic}\noptimizer: {name: lars, nesterov: true}\ntrain: {threads: 1}\n",
       {"optimizer.nesterov: LARS"}},
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string path = write_yaml("run_check_" + std::to_string(i) + ".yaml", rows[i].yaml);
    RunOptions opts;
    opts.db_path = (std::filesystem::path(::testing::TempDir()) / ("run_check_" + std::to_string(i) + ".db")).string();
    opts.quiet = true;
    std::string message;
    try {
      run_experiment(load_experiment(path), opts);
    } catch (const std::exception& e) {
      message = e.what();
    }
    if (std::getenv("CEDAR_SHOW_ERRORS") != nullptr) std::printf("  %-40s %s\n", rows[i].what, message.c_str());
    EXPECT_FALSE(message.empty()) << rows[i].what << ": the run started";
    for (const auto& part : rows[i].expect)
      EXPECT_NE(message.find(part), std::string::npos) << rows[i].what << ": message '" << message << "' lacks '" << part << "'";
  }
}

TEST(BadConfig, IntegersAreDecimalOrHexadecimal) {
  // A leading zero is decimal (YAML 1.2), not octal; 0x is hexadecimal.
  const std::string path = write_yaml("ints.yaml", "train: {batch_size: 010, epochs: 0x10, max_steps: +7}\n");
  ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.train.batch_size, 10);
  EXPECT_EQ(c.train.epochs, 16);
  EXPECT_EQ(c.train.max_steps, 7);
}

TEST(BadConfig, FolderIsNotAnExperiment) {
  const std::string dir = ::testing::TempDir();
  try {
    load_experiment(dir);
    ADD_FAILURE() << "a folder was loaded as an experiment (all defaults)";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cedar
