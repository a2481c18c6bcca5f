// Hostile configurations: a table of bad experiment files and overrides, each rejected with a
// ConfigError whose message names where (file:line:column or the --set key), the key and the bad
// value. Every row goes through what `cedar suite` validates before it starts anything: the grid
// expansion, every run's configuration, and the algorithm's own parameters.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "comm/network_model.h"
#include "config/experiment_config.h"
#include "config/known_names.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "runner/run/experiment.h"
#include "runner/suite/suite.h"

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
  Suite suite = expand_suite(path, {gradient_algorithm_names()}, overrides);
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
  // clang-format off
  static const std::vector<BadConfig> table = {
      // Names that resolve to nothing.
      {"unknown algorithm", "algorithm: {name: sgd-magic}\n", {},
       {"unknown algorithm 'sgd-magic'", "known: dense, dgc"}},
      {"unknown algorithm, short form", "algorithm: qsgd8\n", {}, {"unknown algorithm 'qsgd8'"}},
      {"unknown optimizer", "optimizer: {name: rmsprop}\n", {},
       {"$F:1:19: optimizer.name: 'rmsprop' is not one of sgd|lars|adam|adamw"}},
      {"unknown network profile", "network: {profile: 56k}\n", {},
       {"$F:1:20: network.profile: '56k' is not one of", "10gbe"}},
      {"unknown device", "train: {device: tpu}\n", {}, {"train.device: 'tpu' is not one of cpu|cuda|auto"}},
      {"unknown backend", "train: {backend: gloo}\n", {}, {"$F:1:18: train.backend: 'gloo' is not one of auto|mpi|nccl"}},
      {"nccl on the cpu", "train: {device: cpu, backend: nccl}\n", {},
       {"$F:1:31: train.backend: nccl needs train.device cuda"}},
      {"unknown mixed precision", "train: {amp: fp8}\n", {}, {"$F:1:14: train.amp: 'fp8' is not one of off|bf16|fp16"}},
      {"fp16 loss scaling with overlap", "train: {amp: fp16, overlap: true}\n", {},
       {"$F:1:14: train.amp: fp16 (loss scaling) is not supported with train.overlap"}},
      {"fp16 with overlap by override", "train: {overlap: true}\n", {"train.amp=fp16"},
       {"--set train.amp: train.amp: fp16", "not supported with train.overlap"}},
      {"unknown exchange schedule", "train: {schedule: lifo}\n", {},
       {"$F:1:19: train.schedule: 'lifo' is not one of fifo|priority"}},
      {"priority schedule without overlap", "train: {schedule: priority}\n", {},
       {"$F:1:19: train.schedule: priority orders the exchanges that overlap backward", "train.overlap: true"}},
      {"slices of no gradient", "train: {overlap: true, schedule: priority, slice_kb: 0.001}\n", {},
       {"train.slice_kb", "0.001"}},
      {"unknown lr scaling", "optimizer: {lr_scaling: cubic}\n", {}, {"'cubic' is not one of none|linear|sqrt"}},
      {"trace steps not a range", "train: {trace_steps: last5}\n", {},
       {"$F:1:22: train.trace_steps: 'last5' is not a step number"}},
      {"trace steps backwards by override", "train: {}\n", {"train.trace_steps=8-3"},
       {"--set train.trace_steps: train.trace_steps: '8-3' ends before it starts"}},

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
      {"no evaluation per epoch", "train: {evals_per_epoch: 0}\n", {},
       {"$F:1:26: train.evals_per_epoch: value 0 is out of range [1, inf)"}},
      {"epochs in exponent form", "train: {epochs: 1e3}\n", {}, {"train.epochs: expected an integer, got '1e3'"}},
      {"epochs beyond 64 bits", "train: {epochs: 99999999999999999999}\n", {},
       {"train.epochs: value 99999999999999999999 does not fit"}},
      {"negative seed", "train: {seed: -1}\n", {}, {"train.seed: value -1 does not fit", "allowed: 0 to"}},
      {"zero batch size", "train: {batch_size: 0}\n", {}, {"train.batch_size: value 0 is out of range [1, inf)"}},
      {"target accuracy above 1", "train: {target_accuracy: 1.5}\n", {}, {"train.target_accuracy: value 1.5"}},
      {"zero bucket size", "train: {bucket_mb: 0}\n", {}, {"train.bucket_mb: value 0 is out of range (0, inf)"}},
      {"unknown fusion", "train: {fusion: greedy}\n", {},
       {"$F:1:17: train.fusion", "'greedy' is not one of size|mgwfbp|optimal|auto"}},
      {"fusion of the one-tensor convex models",
       "model: {name: linear}\ndata: {name: synthetic-regression, shards: 2}\n"
       "train: {full_batch: true, fusion: mgwfbp}\n",
       {}, {"$F:3:35: train.fusion: mgwfbp: the convex models are one tensor"}},
      {"negative train limit", "data: {train_limit: -5}\n", {}, {"data.train_limit: value -5"}},
      {"negative prefetch depth", "data: {prefetch: -1}\n", {},
       {"$F:1:18: data.prefetch: value -1 is out of range [0, 64]"}},
      {"no prefetch worker", "data: {workers: 0}\n", {}, {"data.workers: value 0 is out of range [1, 64]"}},
      {"unknown decoding", "data: {decode: later}\n", {}, {"data.decode", "'later' is not one of eager|lazy"}},
      {"lazy decoding of a set read into memory", "data: {name: cifar10, decode: lazy}\n", {},
       {"$F:1:31: data.decode: lazy decoding is for imagenet-folder", "'cifar10'"}},
      {"lazy decoding set for the wrong dataset", "data: {name: mnist}\n", {"data.decode=lazy"},
       {"--set data.decode: data.decode: lazy decoding is for imagenet-folder"}},

      // Grids (cedar suite) and world sizes.
      {"grid world size 0", "grid: {world_size: [2, 0]}\n", {}, {"$F:1:24: grid.world_size: expected positive integers"}},
      {"grid world size negative", "grid: {world_size: [-4]}\n", {}, {"grid.world_size: expected positive integers"}},
      {"grid world size as a word", "grid: {world_size: [four]}\n", {},
       {"$F:1:21: grid.world_size: expected positive integers, got 'four'"}},
      {"grid empty list", "grid: {seed: []}\n", {}, {"grid.seed: empty list"}},
      {"grid algorithm without a name", "grid: {algorithm: [{sparsity: 0.9}]}\n", {},
       {"grid.algorithm: each entry is a name or a mapping with 'name'"}},
      {"grid algorithm with a bad parameter", "grid: {algorithm: [dense, {name: qsgd, bits: 0}]}\n", {},
       {"--set algorithm: algorithm.bits: value 0 is out of range [1, 8]"}},
      // Grid values of the wrong type: the place, the grid key and what was expected (yaml-cpp's
      // own conversion says only "bad conversion").
      {"grid algorithm name as a mapping", "grid: {algorithm: [{name: {x: 1}}]}\n", {},
       {"$F:1:27: grid.algorithm.name: expected an algorithm name, got a mapping"}},
      {"grid algorithm label as a list", "grid: {algorithm: [{name: dgc, label: [a]}]}\n", {},
       {"$F:1:39: grid.algorithm.label: expected a string, got a list"}},
      {"grid key that is a list", "grid: {[a]: 1}\n", {}, {"$F:1:8: grid: keys must be plain names, got a list"}},
      {"grid algorithm key that is a list", "grid: {algorithm: [{name: dense, [x]: 1}]}\n", {},
       {"$F:1:34: grid.algorithm: keys must be plain names, got a list"}},
      {"grid set key that is a list", "grid: {algorithm: [{name: dense, set: {[a]: 1}}]}\n", {},
       {"$F:1:40: grid.algorithm.set: keys must be plain names, got a list"}},
      {"grid overrides key that is a mapping", "grid: {overrides: [{{a: 1}: 2}]}\n", {},
       {"$F:1:21: grid.overrides: keys must be plain names, got a mapping"}},
      {"grid seed as a list", "grid: {seed: [[1]]}\n", {},
       {"$F:1:15: grid.seed: expected non-negative integers, got a list"}},
      {"grid model as a mapping", "grid: {model: [{name: vgg16}]}\n", {},
       {"$F:1:16: grid.model: expected a model name, got a mapping"}},
      {"grid dataset as a null", "grid: {dataset: [~]}\n", {}, {"grid.dataset: expected a dataset name, got a null value"}},
      {"grid override value of the wrong type", "grid:\n  overrides: [{optimizer.lr: fast}]\n", {},
       {"$F:2:16: grid.overrides: --set optimizer.lr: optimizer.lr: expected a number, got 'fast'"}},
      {"grid set value of the wrong type", "grid:\n  algorithm: [{name: dense, set: {train.epochs: [2]}}]\n", {},
       {"$F:2:35: grid.algorithm.set: --set train.epochs: train.epochs: expected an integer, got a list"}},
      {"grid set key that is unknown", "grid:\n  algorithm: [{name: dense, set: {train.epoch: 2}}]\n", {},
       {"$F:2:35: grid.algorithm.set: --set train.epoch: unknown key 'train.epoch'"}},

      // grid.algorithm as {every: registered, settings: ...} (runner/suite/every_registered.h).
      {"grid every: unknown algorithm in settings",
       "grid:\n  algorithm:\n    every: registered\n    settings: {dgc: {}, sgd-magic: {ratio: 1}}\n", {},
       {"$F:4:25: grid.algorithm.settings: 'sgd-magic' is not a registered algorithm", "dense, dgc"}},
      {"grid every: settings for an algorithm outside the trainer", "grid: {algorithm: {every: registered, settings: {ps: {}}}}\n", {},
       {"grid.algorithm.settings: 'ps' is not a registered algorithm that every: registered runs"}},
      {"grid every: other than registered", "grid: {algorithm: {every: mine}}\n", {},
       {"$F:1:27: grid.algorithm.every: expected 'registered', got 'mine'"}},
      {"grid every: missing", "grid: {algorithm: {settings: {dgc: {}}}}\n", {},
       {"grid.algorithm: a mapping needs 'every: registered'"}},
      {"grid every: unknown key", "grid: {algorithm: {every: registered, except: [dgc]}}\n", {},
       {"unknown key 'grid.algorithm.except'"}},
      {"grid every: settings not a mapping", "grid: {algorithm: {every: registered, settings: [dgc]}}\n", {},
       {"grid.algorithm.settings: expected a mapping of algorithm names to their keys, got a list"}},
      {"grid every: a settings entry naming itself", "grid: {algorithm: {every: registered, settings: {dgc: {name: topk}}}}\n", {},
       {"grid.algorithm.settings.dgc: the key above names the algorithm; no 'name' here"}},
      {"grid every: a bad parameter", "grid: {algorithm: {every: registered, settings: {qsgd: {bits: 0}}}}\n", {},
       {"--set algorithm: algorithm.bits: value 0 is out of range [1, 8]"}},
      {"grid every: a set key that is unknown", "grid:\n  algorithm: {every: registered, settings: {dense: {set: {train.epoch: 2}}}}\n", {},
       {"grid.algorithm.settings.dense.set: --set train.epoch: unknown key 'train.epoch'"}},

      // The same grid key twice, and values listed twice (the runs would repeat).
      {"duplicate grid key", "grid:\n  seed: [1]\n  seed: [2]\n", {}, {"$F:3:3: duplicate key 'grid.seed'"}},
      {"duplicate key in a grid algorithm entry", "grid: {algorithm: [{name: dgc, sparsity: 0.9, sparsity: 0.99}]}\n", {},
       {"$F:1:47: duplicate key 'grid.algorithm.sparsity'"}},
      {"duplicate key in a grid set", "grid: {algorithm: [{name: dense, set: {optimizer.lr: 0.1, optimizer.lr: 0.2}}]}\n",
       {}, {"$F:1:59: duplicate key 'grid.algorithm.set.optimizer.lr'"}},
      {"duplicate key in grid overrides", "grid: {overrides: [{train.epochs: 1, train.epochs: 2}]}\n", {},
       {"$F:1:38: duplicate key 'grid.overrides.train.epochs'"}},
      {"seed listed twice", "grid: {seed: [1, 2, 1]}\n", {}, {"$F:1:21: grid.seed: 1 is listed twice"}},
      {"world size listed twice", "grid: {world_size: [2, 2]}\n", {}, {"$F:1:24: grid.world_size: 2 is listed twice"}},
      {"model listed twice", "grid: {model: [lenet5, lenet5]}\n", {}, {"$F:1:24: grid.model: lenet5 is listed twice"}},

      // Keys two parts of a suite would both set, one silently winning.
      {"override of the seed the suite sets", "grid: {overrides: [{train.seed: 3}]}\n", {},
       {"$F:1:21: grid.overrides: 'train.seed' is set by the suite for every run", "grid.seed"}},
      {"override of the run name", "grid: {overrides: [{name: x}]}\n", {},
       {"$F:1:21: grid.overrides: 'name' is set by the suite for every run"}},
      {"override of a section holding the seed", "grid: {overrides: [{train: {epochs: 2, seed: 4}}]}\n", {},
       {"$F:1:21: grid.overrides: 'train.seed' is set by the suite"}},
      {"override of the model the grid varies", "grid: {model: [lenet5, resnet20], overrides: [{model.name: vgg11}]}\n",
       {}, {"$F:1:48: grid.overrides: 'model.name' is set by grid.model"}},
      {"override of the algorithm the grid varies", "grid: {algorithm: [dense, dgc], overrides: [{algorithm.name: topk}]}\n",
       {}, {"$F:1:46: grid.overrides: 'algorithm.name' is set by grid.algorithm"}},
      {"override and an entry's set on one key",
       "grid: {algorithm: [{name: signsgd, set: {optimizer.lr: 0.001}}], overrides: [{optimizer.lr: 0.1}]}\n", {},
       {"$F:1:79: grid.overrides: 'optimizer.lr' is also set by grid.algorithm entry 'signsgd'"}},
      {"override replacing a section an entry's set writes into",
       "grid: {algorithm: [{name: signsgd, set: {optimizer.lr: 0.001}}], overrides: [{optimizer: {momentum: 0}}]}\n", {},
       {"grid.overrides: 'optimizer' is also set by grid.algorithm entry 'signsgd'", "'optimizer.lr'"}},
      {"set of the algorithm's own parameter", "grid: {algorithm: [{name: dgc, set: {algorithm.sparsity: 0.9}}]}\n", {},
       {"$F:1:38: grid.algorithm.set: 'algorithm.sparsity' belongs in the entry itself"}},

      // Model and dataset names, checked when the file is loaded.
      {"unknown model", "model: {name: resnet21}\n", {},
       {"$F:1:15: model.name: unknown model 'resnet21' (known: resnet20, ", "lenet5"}},
      {"unknown dataset", "data: {name: cifar11}\n", {},
       {"$F:1:14: data.name: unknown dataset 'cifar11' (known: cifar10, ", "synthetic"}},
      {"empty model name", "model: {name: ''}\n", {}, {"$F:1:15: model.name: unknown model ''"}},
      {"unknown model from --set", "train: {epochs: 1}\n", {"model.name=vgg17"},
       {"--set model.name: model.name: unknown model 'vgg17'"}},
      {"unknown model in the grid", "grid: {model: [lenet5, lenet6]}\n", {},
       {"$F:1:24: grid.model: unknown model 'lenet6' (known: resnet20, "}},
      {"unknown dataset in the grid", "grid: {dataset: [mnist, emnist]}\n", {},
       {"$F:1:25: grid.dataset: unknown dataset 'emnist' (known: cifar10, "}},

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
  // clang-format on
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
    if (std::getenv("CEDAR_SHOW_ERRORS") != nullptr)
      std::printf("  %-40s %s\n", row.what, message.c_str());
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
      "grid: {overrides: [{optimizer.lr: 0.05}, {optimizer.lr: 0.1}], seed: [1, 2]}\n",
      "grid: {algorithm: [{name: signsgd, set: {optimizer.lr: 0.001}}], overrides: "
      "[{optimizer.momentum: 0.5}]}\n",
      "grid: {overrides: [{train: {epochs: 2}}], seed: [3]}\n",
      "algorithm: {name: dgc}\ngrid: {overrides: [{algorithm.sparsity: 0.99}, {algorithm.sparsity: "
      "0.9}]}\n",
      "model: {name: lenet5}\ngrid: {model: [resnet20, vgg11], dataset: [synthetic, cifar100]}\n",
      "model: {name: vgg16}\ndata: {name: imagenet-folder}\n",
      "train: {device: cuda, backend: mpi}\n",
      "train: {device: auto, backend: nccl}\n",
      "train: {amp: fp16, device: cpu}\n",
      "train: {amp: bf16, overlap: true}\n",
      "train: {overlap: true, schedule: priority, slice_kb: 160}\n",
  };
  for (size_t i = 0; i < good.size(); ++i) {
    const std::string path = write_yaml("good_config_" + std::to_string(i) + ".yaml", good[i]);
    EXPECT_NO_THROW(validate(path, {})) << good[i];
  }
}

// What only a run can check (the data set's size, combinations of options): `cedar run`
// on synthetic data, one rank. None of the algorithms constrains the world size (signSGD's vote
// ties on an even count give 0 by design) and no option requires divisibility of the batch: the
// one batch constraint is that batch_size x ranks fits in the training set.
TEST(BadConfig, RunTimeChecksNameTheValue) {
  struct Row {
    const char* what;
    std::string yaml;
    std::vector<std::string> expect;
  };
  // clang-format off
  std::vector<Row> rows = {
      {"batch larger than the training set", "model: {name: lenet5}\ndata: {name: synthetic}\ntrain: {batch_size: 5000, threads: 1}\n",
       {"train.batch_size 5000 x 1 ranks exceeds the 2048 training images"}},
      {"LARS with Nesterov momentum", "model: {name: lenet5}\ndata: {name: synthetic}\noptimizer: {name: lars, nesterov: true}\ntrain: {threads: 1}\n",
       {"optimizer.nesterov: LARS"}},
      {"mixed precision with the parameter server", "model: {name: lenet5}\ndata: {name: synthetic}\nalgorithm: ps\ntrain: {amp: bf16, threads: 1}\n",
       {"train.amp 'bf16': algorithm ps trains in fp32"}},
      {"priority schedule with an algorithm that compresses buckets", "model: {name: lenet5}\ndata: {name: synthetic}\nalgorithm: qsgd\ntrain: {overlap: true, schedule: priority, threads: 1}\n",
       {"train.schedule: priority cuts the buckets into slices", "algorithm 'qsgd'", "priority scheduling runs dense"}},
      {"two-level allreduce on nodes that do not divide the ranks", "model: {name: lenet5}\ndata: {name: synthetic}\nnetwork: {allreduce: two_level, ranks_per_node: 3}\ntrain: {threads: 1}\n",
       {"network.allreduce: two_level needs nodes of equal size", "3 ranks per node", "the 1 ranks"}},
  };
  // clang-format on
  if (!torch::cuda::is_available()) {
    // What a machine without a GPU cannot provide.
    rows.push_back({"cuda without a GPU",
                    "model: {name: lenet5}\ndata: {name: synthetic}\ntrain: {device: cuda, "
                    "backend: mpi, threads: 1}\n",
                    {"train.device: cuda requested but no GPU is visible"}});
    rows.push_back({"nccl where auto finds no GPU",
                    "model: {name: lenet5}\ndata: {name: synthetic}\ntrain: {device: auto, "
                    "backend: nccl, threads: 1}\n",
                    {"train.backend: nccl needs a GPU, but this run is on the CPU"}});
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string path = write_yaml("run_check_" + std::to_string(i) + ".yaml", rows[i].yaml);
    RunOptions opts;
    opts.db_path =
        (std::filesystem::path(::testing::TempDir()) / ("run_check_" + std::to_string(i) + ".db"))
            .string();
    opts.quiet = true;
    std::string message;
    try {
      run_experiment(load_experiment(path), opts);
    } catch (const std::exception& e) {
      message = e.what();
    }
    if (std::getenv("CEDAR_SHOW_ERRORS") != nullptr)
      std::printf("  %-40s %s\n", rows[i].what, message.c_str());
    EXPECT_FALSE(message.empty()) << rows[i].what << ": the run started";
    for (const auto& part : rows[i].expect)
      EXPECT_NE(message.find(part), std::string::npos)
          << rows[i].what << ": message '" << message << "' lacks '" << part << "'";
  }
}

// Names are checked at load against lists kept without LibTorch; they must be exactly what the
// registries build, or a valid name would be refused (or an unknown one accepted until set-up).
TEST(BadConfig, KnownNamesAreTheRegistries) {
  std::vector<std::string> models, datasets;
  for (const auto& m : model_catalog()) models.push_back(m.name);
  for (const auto& d : dataset_catalog()) datasets.push_back(d.name);
  EXPECT_EQ(known_model_names(), models);
  EXPECT_EQ(known_dataset_names(), datasets);
  EXPECT_EQ(known_network_profile_names(), network_profile_names());
  EXPECT_EQ(known_intra_profile_names(), intra_node_profile_names());
  EXPECT_EQ(known_allreduce_scheme_names(), allreduce_scheme_names());
  // And every one of them loads: the convex models with the regression data sets (full batch,
  // the data's task the model's), the networks with the image sets; other pairs are refused.
  auto convex = [](const std::string& n) {
    return n == "linear" || n == "logistic" || n == "synthetic-regression" ||
           n == "sign-counterexample";
  };
  for (const auto& m : models)
    for (const auto& d : datasets) {
      const std::string yaml = "model: {name: " + m + "}\ndata: {name: " + d + "}\n";
      if (convex(m) != convex(d) || (m == "logistic" && d == "sign-counterexample")) {
        EXPECT_THROW(load_experiment(write_yaml(
                         "names.yaml", yaml + (convex(m) ? "train: {full_batch: true}\n" : ""))),
                     ConfigError)
            << m << " " << d;
        continue;
      }
      const std::string extra =
          convex(m)
              ? "train: {full_batch: true}\n" +
                    std::string(m == "logistic" ? "data: {name: " + d + ", task: logistic}\n" : "")
              : "";
      const std::string text = m == "logistic" ? "model: {name: logistic}\n" + extra : yaml + extra;
      EXPECT_NO_THROW(load_experiment(write_yaml("names.yaml", text))) << m << " " << d;
    }
}

TEST(BadConfig, IntegersAreDecimalOrHexadecimal) {
  // A leading zero is decimal (YAML 1.2), not octal; 0x is hexadecimal.
  const std::string path =
      write_yaml("ints.yaml", "train: {batch_size: 010, epochs: 0x10, max_steps: +7}\n");
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

// A check between sections must name the key at fault when the other section is absent, not
// fail inside yaml-cpp on the missing one (a missing key is an invalid node there, and asking it
// for its type throws YAML::InvalidNode, which is not a ConfigError and ends the process).
TEST(BadConfig, CrossSectionChecksWithASectionAbsent) {
  struct Row {
    const char* yaml;
    const char* names;
  };
  const Row rows[] = {
      {"data: {name: synthetic-regression}\n", "model.name"},
      {"data: {name: sign-counterexample}\ntrain: {full_batch: true}\n", "model.name"},
      {"model: {name: linear}\n", "model.name"},
      {"model: {name: linear}\ndata: {name: synthetic-regression}\n", "full_batch"},
      {"train: {full_batch: true}\n", "full_batch"},
      {"train: {target_gap: 0.1}\n", "target_gap"},
      {"train: {backend: nccl, device: cpu}\n", "train.backend"},
      {"train: {amp: fp16, overlap: true}\n", "train.amp"},
      {"data: {decode: lazy}\n", "data.decode"},
      {"train: {trace_steps: 1-}\n", "train.trace_steps"},
  };
  for (const auto& row : rows) {
    try {
      load_experiment(write_yaml("absent.yaml", row.yaml));
      ADD_FAILURE() << "accepted: " << row.yaml;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(row.names), std::string::npos)
          << row.yaml << " -> " << e.what();
    }
  }
}

}  // namespace
}  // namespace cedar
