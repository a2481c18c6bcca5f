// Reports rendered from a small fixed database and compared byte for byte with tests/golden/.
// After an intended change of a report's layout, regenerate the golden files and review the diff:
//   CEDAR_UPDATE_GOLDEN=1 ctest --test-dir build -R report_golden_test
//   git diff tests/golden/
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "comm/network_model.h"
#include "reports/claims.h"
#include "reports/comparison.h"
#include "reports/projection.h"
#include "tests/unit/results_fixture.h"

namespace cedar {
namespace {

using fixture::RunSpec;

std::string read_file(const std::string& path, bool* found) {
  std::ifstream in(path, std::ios::binary);
  *found = static_cast<bool>(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Compares `actual` with tests/golden/<name>; with CEDAR_UPDATE_GOLDEN=1 rewrites the file instead.
void expect_golden(const std::string& name, const std::string& actual) {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (CEDAR_SOURCE_DIR)";
  const std::string golden = std::string(src) + "/tests/golden/" + name;
  const char* update = std::getenv("CEDAR_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << actual;
    std::printf("rewrote %s\n", golden.c_str());
    return;
  }
  bool found = false;
  const std::string expected = read_file(golden, &found);
  ASSERT_TRUE(found)
      << golden << " is missing; create it with CEDAR_UPDATE_GOLDEN=1 ctest -R report_golden_test";
  if (expected == actual) return;
  // Keep what was rendered beside the build so that `diff -u` shows the whole change.
  const char* bin = std::getenv("CEDAR_BINARY_DIR");
  const std::string actual_path =
      std::string(bin ? bin : ::testing::TempDir().c_str()) + "/golden-actual-" + name;
  std::ofstream(actual_path, std::ios::binary) << actual;
  auto want = lines_of(expected), got = lines_of(actual);
  size_t line = 0;
  while (line < want.size() && line < got.size() && want[line] == got[line]) ++line;
  ADD_FAILURE() << name << " differs from the golden file, first at line " << line + 1 << ":\n"
                << "  expected: " << (line < want.size() ? want[line] : "<end of file>") << "\n"
                << "  actual:   " << (line < got.size() ? got[line] : "<end of file>") << "\n"
                << "see: diff -u " << golden << " " << actual_path << "\n"
                << "if the change is intended: CEDAR_UPDATE_GOLDEN=1 ctest -R report_golden_test";
}

RunSpec run(const std::string& name, const std::string& algorithm, int64_t seed, double final_acc,
            double wall, fixture::CollectiveSpec c) {
  RunSpec s;
  s.suite = "golden";
  s.name = name;
  s.algorithm = algorithm;
  s.seed = seed;
  s.world_size = 2;
  s.steps_per_epoch = 32;
  s.batch_size = 32;  // a step every 0.25 s: 128 images per second per rank
  s.epochs = 2;
  s.compute_seconds = 0.25;
  s.dense_bytes = 1048576;  // 262,144 fp32 gradients
  s.collectives = {c};
  s.final_accuracy = final_acc;
  s.best_accuracy = final_acc + 0.0025;
  s.wall_seconds = wall;
  s.evals = {{wall / 2, final_acc - 0.0625}, {wall, final_acc}};
  return s;
}

class ReportGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = ::testing::TempDir() + "report_golden_test.db";
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
    ResultStore store(path_);
    const int64_t dense = 1048576;
    fixture::write_run(store,
                       run("dense", "dense", 1, 0.875, 40.5, {"allreduce", 1, {dense, dense}}));
    fixture::write_run(store,
                       run("dense", "dense", 2, 0.8625, 41.5, {"allreduce", 1, {dense, dense}}));
    fixture::write_run(store,
                       run("dgc", "dgc", 1, 0.86875, 32.25, {"allgatherv", 1, {4200, 4200}}));
    fixture::write_run(store,
                       run("qsgd_4bit", "qsgd", 1, 0.8125, 36, {"allgather", 2, {81920, 81920}}));
    RunSpec failed = run("fp16", "fp16", 1, 0, 3, {"allgather", 1, {524288, 524288}});
    failed.status = "failed";
    fixture::write_run(store, failed);
  }
  static std::vector<ComparisonRow> rows(double target) {
    return compare_runs(load_runs(path_, "golden", target), target);
  }
  static std::string path_;
};
std::string ReportGolden::path_;

TEST_F(ReportGolden, ComparisonMarkdown) {
  expect_golden("comparison.md", render_markdown(rows(0.85)));
}
TEST_F(ReportGolden, ComparisonCsv) { expect_golden("comparison.csv", render_csv(rows(0.85))); }
TEST_F(ReportGolden, ComparisonLatex) { expect_golden("comparison.tex", render_latex(rows(0))); }

// The fixture's runs have one or two seeds (insufficient for a finding); signSGD against momentum
// SGD below has three seeds each, paired, to show an interval.
TEST_F(ReportGolden, ClaimsVerdicts) {
  auto claim = [](const char* text, const char* source, const char* kind, const char* run,
                  const char* metric, std::optional<double> lo, std::optional<double> hi) {
    Claim c;
    c.text = text;
    c.source = source;
    c.kind = kind;
    c.run = run;
    c.metric = metric;
    c.at_least = lo;
    c.at_most = hi;
    return c;
  };
  std::vector<Claim> claims = {
      claim("DGC keeps accuracy", "Lin et al. 2018, Table 2", "finding", "dgc", "accuracy_gap",
            -1.0, std::nullopt),
      claim("DGC compresses >= 270x", "Lin et al. 2018, abstract", "accounting", "dgc",
            "payload_compression", 270.0, std::nullopt),
      claim("DGC >= 200x on the wire", "(wire)", "accounting", "dgc", "wire_ratio", 200.0,
            std::nullopt),
      claim("QSGD faster on 1 GbE", "Alistarh et al. 2017", "finding", "qsgd_4bit",
            "modeled_speedup", 1.0, std::nullopt),
      claim("fp16 accuracy window", "mixed precision", "finding", "fp16", "accuracy", 80.0, 90.0),
      claim("Signum matches momentum SGD", "Bernstein et al. 2018", "finding", "signsgd",
            "accuracy_gap", -1.0, std::nullopt)};
  claims[0].setting = "ResNet-110, CIFAR-10, 4 workers";
  claims[0].reduced = "ResNet-20, 2 epochs";
  claims[2].window.from_step = 2;
  claims[5].baseline = "sgd";
  std::vector<RunResult> seeded;
  const double sgd[] = {0.9, 0.905, 0.91}, signsgd[] = {0.8975, 0.9, 0.9125};
  for (int s = 0; s < 3; ++s)
    for (auto [name, acc] :
         {std::pair<const char*, double>{"sgd", sgd[s]}, {"signsgd", signsgd[s]}}) {
      RunResult r;
      r.name = name;
      r.algorithm = std::string(name) == "sgd" ? "dense" : "signsgd";
      r.model = "lenet5";
      r.dataset = "fashion-mnist";
      r.status = "completed";
      r.seed = s + 1;
      r.final_accuracy = r.best_accuracy = acc;
      seeded.push_back(r);
    }
  auto all = rows(0);
  for (auto& r : compare_runs(seeded)) all.push_back(r);
  expect_golden("claims.md", render_claims_markdown(evaluate_claims(
                                 claims, all, database_window_reader(path_, "golden"))));
}

TEST_F(ReportGolden, ProjectionMarkdownAndCsv) {
  auto ms = load_measurements(path_, "golden");
  auto ps = project_runs(ms, ms, {8, 64, 128}, find_network_profile("10gbe"));
  expect_golden("projection.md", render_projection_markdown(ps));
  expect_golden("projection.csv", render_projection_csv(ps));
}

}  // namespace
}  // namespace cedar
