// The preflight of a suite (runner/suite/preflight.h): one suite whose runs break in distinct ways
// (a missing data set, a truncated CIFAR batch, an IDX file with a wrong magic, an unknown model,
// an algorithm parameter out of range, a batch larger than a rank's shard) and an unwritable
// results folder; every problem is reported, each naming its runs, and nothing is written. A
// valid suite passes, and a run completed earlier is not checked again.
#include "runner/suite/preflight.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "results/store.h"
#include "runner/suite/suite.h"
#include "tests/unit/testdata_writers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;
using testdata::TempDir;

std::vector<uint8_t> bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 13);
  return v;
}

// Fashion-MNIST-shaped IDX files: `train` and `test` 28 x 28 images.
void write_mnist(const fs::path& dir, uint32_t train, uint32_t test, uint32_t train_magic = 0x803) {
  testdata::write_idx_images(dir / "train-images-idx3-ubyte.gz", bytes(train * 784), train, 28, 28,
                             true, train_magic);
  testdata::write_idx_labels(dir / "train-labels-idx1-ubyte.gz", std::vector<uint8_t>(train, 1),
                             true);
  testdata::write_idx_images(dir / "t10k-images-idx3-ubyte.gz", bytes(test * 784), test, 28, 28,
                             true);
  testdata::write_idx_labels(dir / "t10k-labels-idx1-ubyte.gz", std::vector<uint8_t>(test, 2),
                             true);
}

void write_cifar10(const fs::path& dir) {
  for (int f = 1; f <= 5; ++f)
    testdata::write_cifar10_batch(dir / ("data_batch_" + std::to_string(f) + ".bin"),
                                  bytes(2 * 3072), {1, 2});
  testdata::write_cifar10_batch(dir / "test_batch.bin", bytes(2 * 3072), {3, 4});
}

std::string write_suite(const fs::path& file, const std::string& good,
                        const std::string& overrides) {
  std::ofstream out(file);
  out << "name: pf\nsuite: pf\nmodel: {name: lenet5}\n"
      << "data: {name: fashion-mnist, root: " << good << "}\n"
      << "train: {epochs: 1, batch_size: 4, threads: 1}\n"
      << "optimizer: {lr: 0.05}\nalgorithm: dense\n"
      << "grid:\n  world_size: [2]\n  overrides:\n"
      << overrides;
  return file.string();
}

// The problems of `group` whose message holds every one of `parts`.
std::vector<PreflightProblem> find(const PreflightReport& report, const std::string& group,
                                   const std::vector<std::string>& parts) {
  std::vector<PreflightProblem> out;
  for (const auto& p : report.problems) {
    bool all = p.group == group;
    for (const auto& part : parts) all = all && p.message.find(part) != std::string::npos;
    if (all) out.push_back(p);
  }
  return out;
}

using Runs = std::vector<std::string>;

TEST(Preflight, ReportsEveryProblemWithItsRuns) {
  TempDir tmp("preflight");
  const fs::path good = tmp.path() / "good", truncated = tmp.path() / "truncated";
  write_mnist(good, 16, 4);
  write_cifar10(truncated);
  testdata::write_bytes(truncated / "data_batch_3.bin", bytes(3073 + 1000));
  write_mnist(tmp.path() / "magic", 16, 4, 0x804);
  write_mnist(tmp.path() / "small", 6, 4);
  const std::string missing = (tmp.path() / "missing").string();
  const std::string path = write_suite(tmp.path() / "pf.yaml", good.string(),
                                       "    - {data.root: " + good.string() +
                                           "}\n"  // o0
                                           "    - {data.name: cifar10, data.root: " +
                                           missing +
                                           "}\n"  // o1
                                           "    - {data.name: cifar10, data.root: " +
                                           truncated.string() +
                                           "}\n"  // o2
                                           "    - {data.root: " +
                                           (tmp.path() / "magic").string() +
                                           "}\n"                                         // o3
                                           "    - {model.name: resnet99}\n"              // o4
                                           "    - {algorithm: {name: qsgd, bits: 0}}\n"  // o5
                                           "    - {data.root: " +
                                           (tmp.path() / "small").string() +
                                           "}\n"  // o6
                                           "    - {data.name: cifar10, data.root: " +
                                           missing + ", train.batch_size: 2}\n");  // o7
  const Suite suite =
      expand_suite(path, {gradient_algorithm_names()}, {}, /*keep_invalid_runs=*/true);
  ASSERT_EQ(suite.runs.size(), 8u);
  const std::string db = "/proc/cedar-preflight-test/results.db";
  const PreflightReport report = preflight(suite, {db, {}, true});

  std::string all;
  for (const auto& p : report.problems)
    for (const auto& r : p.runs) all += p.group + ": " + p.message + " [" + r + "]\n";
  SCOPED_TRACE(all);
  // Configuration: the unknown model and the algorithm parameter out of range, naming the key.
  auto model = find(report, "configuration", {"resnet99", "model.name"});
  ASSERT_EQ(model.size(), 1u);
  EXPECT_EQ(model[0].runs, Runs{"dense/o4"});
  auto bits = find(report, "configuration", {"algorithm.bits", "0"});
  ASSERT_EQ(bits.size(), 1u);
  EXPECT_EQ(bits[0].runs, Runs{"dense/o5"});
  EXPECT_TRUE(report.fingerprints[4].empty() && report.fingerprints[5].empty());
  EXPECT_FALSE(report.fingerprints[0].empty());
  // Data: one data set probed once, its problem naming both runs that use it.
  auto absent = find(report, "data", {"missing folder " + missing});
  ASSERT_EQ(absent.size(), 1u);
  EXPECT_EQ(absent[0].runs, (Runs{"dense/o1", "dense/o7"}));
  auto cut = find(report, "data", {(truncated / "data_batch_3.bin").string(), "4073 bytes"});
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].runs, Runs{"dense/o2"});
  auto magic =
      find(report, "data",
           {(tmp.path() / "magic" / "train-images-idx3-ubyte.gz").string(), "magic 0x00000804"});
  ASSERT_EQ(magic.size(), 1u);
  EXPECT_EQ(magic[0].runs, Runs{"dense/o3"});
  // Sizes: 4 images x 2 ranks per step, 6 training images.
  auto sizes = find(report, "sizes", {"train.batch_size 4 x 2 rank(s) = 8", "the 6 training"});
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(sizes[0].runs, Runs{"dense/o6"});
  // Folders: the database's and the checkpoints' (beside it) in a folder nothing can create,
  // for every run whose configuration is valid.
  auto folder = find(report, "folders", {"results database '" + db + "'", "cannot create files"});
  ASSERT_EQ(folder.size(), 1u);
  EXPECT_EQ(folder[0].runs.size(), 6u);
  EXPECT_EQ(find(report, "folders", {"checkpoint folder '" + db + ".checkpoints'"}).size(), 1u);
  // Once per distinct data set (o1 and o7 share one) and model (LeNet-5 for 1 x 28 x 28, 10
  // classes), for the 6 runs whose configuration is valid.
  EXPECT_EQ(report.launching, 6u);
  EXPECT_EQ(report.data_sets, 5u);
  EXPECT_EQ(report.models, 1u);
  // Nothing else: the valid run o0 is stopped by the folders alone.
  EXPECT_EQ(report.problems.size(), 8u);
  for (const auto& p : report.problems) {
    const auto o0 = std::count(p.runs.begin(), p.runs.end(), "dense/o0");
    EXPECT_EQ(o0, p.group == "folders" ? 1 : 0) << p.message;
  }

  // The rendered report: grouped, in order, every message with its runs.
  const std::string text = PreflightError(report).what();
  EXPECT_EQ(text.rfind("preflight: 8 problems stop 8 of 8 run(s)", 0), 0u) << text;
  size_t at = 0;
  for (const char* group : {"configuration:", "data:", "sizes:", "folders:"}) {
    const size_t next = text.find(group, at);
    EXPECT_NE(next, std::string::npos) << group << " after offset " << at;
    at = next == std::string::npos ? at : next;
  }
  for (const auto& p : report.problems) EXPECT_NE(text.find(p.message), std::string::npos);
  EXPECT_NE(text.find("[runs dense/o1, dense/o7]"), std::string::npos);
  // Only the configurations when the rest is skipped.
  const PreflightReport skipped = preflight(suite, {db, {}, false});
  EXPECT_EQ(skipped.problems.size(), 2u);
  EXPECT_FALSE(skipped.configurations_ok());
  EXPECT_NE(std::string(PreflightError(skipped).what()).find("checked with --skip-preflight too"),
            std::string::npos);
  EXPECT_NE(text.find("--skip-preflight launches without"), std::string::npos);
}

TEST(Preflight, AValidSuitePassesAndWritesNothing) {
  TempDir tmp("preflight_ok");
  write_mnist(tmp.path() / "data", 16, 4);
  const std::string path =
      write_suite(tmp.path() / "ok.yaml", (tmp.path() / "data").string(),
                  "    - {train.batch_size: 8}\n    - {train.checkpoint_dir: " +
                      (tmp.path() / "out" / "ckpt").string() + "}\n");
  const Suite suite = expand_suite(path, {gradient_algorithm_names()}, {}, true);
  const std::string db = (tmp.path() / "out" / "results.db").string();
  const PreflightReport report = preflight(suite, {db, {}, true});
  std::string problems;
  for (const auto& p : report.problems) problems += p.message + "\n";
  EXPECT_TRUE(report.ok()) << problems;
  EXPECT_EQ(report.fingerprints.size(), 2u);
  // Not the database, not its folder, no probe file left behind.
  std::set<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path()))
    left.insert(e.path().lexically_relative(tmp.path()).string());
  EXPECT_EQ(left, (std::set<std::string>{"ok.yaml", "data", "data/train-images-idx3-ubyte.gz",
                                         "data/train-labels-idx1-ubyte.gz",
                                         "data/t10k-images-idx3-ubyte.gz",
                                         "data/t10k-labels-idx1-ubyte.gz"}));
}

TEST(Preflight, ChecksOnlyTheRunsAboutToLaunch) {
  TempDir tmp("preflight_done");
  write_mnist(tmp.path() / "data", 16, 4);
  const std::string path = write_suite(tmp.path() / "done.yaml", (tmp.path() / "data").string(),
                                       "    - {train.batch_size: 4}\n"
                                       "    - {train.batch_size: 16}\n"
                                       "    - {train.batch_size: 32}\n");
  const Suite suite = expand_suite(path, {gradient_algorithm_names()}, {}, true);
  const std::string db = (tmp.path() / "results.db").string();
  const PreflightReport before = preflight(suite, {db, {}, true});
  ASSERT_EQ(before.problems.size(), 2u);  // o1 and o2: 32 and 64 images per step, 16 images
  // --only 2: run o1 is not about to launch.
  const PreflightReport only = preflight(suite, {db, {2}, true});
  ASSERT_EQ(only.problems.size(), 1u);
  EXPECT_EQ(only.problems[0].runs, Runs{"dense/o2"});
  // o1 completed earlier (say, before its data shrank): it is skipped, not checked.
  {
    ResultStore store(db);
    RunRecord r;
    r.suite = "pf";
    r.name = "dense/o1";
    r.config_hash = before.fingerprints[1];
    store.finish_run(store.begin_run(r), "completed", "", RunSummary{});
  }
  const PreflightReport after = preflight(suite, {db, {}, true});
  ASSERT_EQ(after.problems.size(), 1u);
  EXPECT_EQ(after.problems[0].runs, Runs{"dense/o2"});
}

}  // namespace
}  // namespace cedar
