// Training throughput (reports/throughput.h): images per second on one rank from the step rows'
// wall-clock, evaluations left out, median over epochs; and the comparison table's column.
#include "reports/throughput.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "reports/comparison.h"
#include "reports/precision.h"
#include "tests/unit/results_fixture.h"

namespace cedar {
namespace {

// Three epochs of 4 steps, batch 8 per rank: steps of 0.5 s, then 0.25 s, then 0.125 s, so 16,
// 32 and 64 images per second. A 3 s evaluation after step 2 and one at each epoch's end lie
// between step rows.
std::vector<StepTime> three_epochs() {
  return {{0, 0, 0.5},  {1, 0, 1.0}, {2, 0, 4.5},   {3, 0, 5.0},  {4, 1, 7.25},   {5, 1, 7.5},
          {6, 1, 7.75}, {7, 1, 8.0}, {8, 2, 9.125}, {9, 2, 9.25}, {10, 2, 9.375}, {11, 2, 9.5}};
}
const std::vector<EvalTime> kEvals = {{2, 4.0}, {4, 7.0}, {8, 9.0}, {12, 10.0}};

TEST(Throughput, EvaluationsLeftOutMedianOverEpochs) {
  // With the evaluations' time counted, epoch 0 would be 32 / 5 s and epoch 1 32 / 2 s.
  EXPECT_DOUBLE_EQ(training_images_per_second(three_epochs(), kEvals, 8), 32.0);
}

TEST(Throughput, EvenEpochCountTakesTheMiddleTwo) {
  auto steps = three_epochs();
  steps.resize(8);  // epochs 0 and 1: 16 and 32 images per second
  EXPECT_DOUBLE_EQ(training_images_per_second(steps, kEvals, 8), 24.0);
}

TEST(Throughput, AParameterServersAsynchronousRowsAreOneWorkersStepEach) {
  // Three workers' steps, one row each (asp), every 0.25 s: the server applies 8 batches of 4
  // images a second, each worker trains a third of them.
  std::vector<StepTime> steps;
  for (int64_t i = 0; i < 12; ++i) steps.push_back({i, 0, 0.25 * double(i + 1), 1.0 / 3});
  EXPECT_NEAR(training_images_per_second(steps, {}, 4), 16.0 / 3, 1e-12);
  for (auto& s : steps) s.share = 1;
  EXPECT_DOUBLE_EQ(training_images_per_second(steps, {}, 4), 16.0) << "as rounds of every rank";
}

TEST(Throughput, AnEvaluationOutsideTheGapIsNotSubtracted) {
  // An evaluation row whose time does not lie between its neighbouring steps' rows.
  std::vector<StepTime> steps = {{0, 0, 1.0}, {1, 0, 2.0}, {2, 0, 3.0}, {3, 0, 4.0}};
  EXPECT_DOUBLE_EQ(training_images_per_second(steps, {{2, 9.0}}, 4), 4.0);
}

// Step seconds (step_speedup's measure): the gaps of steps 1-11 of three_epochs() less the
// evaluations in them are 0.5 (×3), 0.25 (×4) and 0.125 (×4): the median of eleven is 0.25.
TEST(StepSeconds, MedianAfterStepZeroEvaluationsLeftOut) {
  EXPECT_DOUBLE_EQ(median_step_seconds(three_epochs(), kEvals), 0.25);
  // From step 8: four steps of 0.125 s, the evaluation after step 8 left out (with it, step 8
  // took 1.125 s and the median of four would still be 0.125: steps 2-3 show the difference).
  EXPECT_DOUBLE_EQ(median_step_seconds(three_epochs(), kEvals, 8), 0.125);
  auto first_epoch = three_epochs();
  first_epoch.resize(4);
  EXPECT_DOUBLE_EQ(median_step_seconds(first_epoch, kEvals, 2), 0.5);  // not (3.5 + 0.5) / 2
  EXPECT_DOUBLE_EQ(median_step_seconds(first_epoch, {}, 2), 2.0);
}

TEST(StepSeconds, StepZeroNeverCountsAndNoStepIsUnknown) {
  // Step 0's row comes 10 s after the start (set-up); the others 1 s apart.
  std::vector<StepTime> steps = {{0, 0, 10.0}, {1, 0, 11.0}, {2, 0, 12.0}};
  EXPECT_DOUBLE_EQ(median_step_seconds(steps, {}, 0), 1.0);
  EXPECT_EQ(median_step_seconds({steps[0]}, {}), 0);
  EXPECT_EQ(median_step_seconds({}, {}), 0);
}

TEST(StepSeconds, AnAsynchronousRowIsOneWorkersStep) {
  // Rows every 0.25 s, each a third of a round: a worker's step takes 0.75 s.
  std::vector<StepTime> steps;
  for (int64_t i = 0; i < 6; ++i) steps.push_back({i, 0, 0.25 * double(i + 1), 1.0 / 3});
  EXPECT_NEAR(median_step_seconds(steps, {}), 0.75, 1e-12);
}

TEST(Throughput, UnknownWithoutBatchSizeOrSteps) {
  EXPECT_EQ(training_images_per_second(three_epochs(), kEvals, 0), 0);
  EXPECT_EQ(training_images_per_second({}, kEvals, 8), 0);
}

TEST(Throughput, BatchSizeFromTheResolvedConfiguration) {
  EXPECT_EQ(batch_size_of("name: x\ntrain:\n  epochs: 2\n  batch_size: 64\n"), 64);
  EXPECT_EQ(batch_size_of("name: x\n"), 0);
  EXPECT_EQ(batch_size_of("train: 3\n"), 0);
  EXPECT_EQ(batch_size_of("train: {batch_size: [1]}\n"), 0);
  EXPECT_EQ(batch_size_of("not: [yaml"), 0);
}

TEST(Throughput, ComparisonColumnIsTheMeanOverSeeds) {
  const std::string path = ::testing::TempDir() + "throughput_test.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  {
    ResultStore store(path);
    fixture::RunSpec s;
    s.suite = "t";
    s.name = "dense";
    s.algorithm = "dense";
    s.batch_size = 16;
    s.compute_seconds = 0.125;  // 128 images per second per rank
    s.collectives = {{"allreduce", 1, {400, 400}}};
    fixture::write_run(store, s);
    s.seed = 2;
    s.compute_seconds = 0.25;  // 64
    fixture::write_run(store, s);
    s.name = "no-batch";
    s.batch_size = 0;
    fixture::write_run(store, s);
  }
  auto rows = compare_runs(load_runs(path, "t"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].images_per_second, 96.0);
  EXPECT_EQ(rows[1].images_per_second, 0);
  const std::string md = render_markdown(rows);
  EXPECT_NE(md.find("| wall s | img/s/rank | payload MB/rank |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 96 |"), std::string::npos) << md;
  const std::string csv = render_csv(rows);
  EXPECT_NE(csv.find(",train_img_per_s_per_rank\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",96.0\n"), std::string::npos) << csv;
}

// A parameter server's ranks are servers and workers with different traffic, and its step rows
// count applied updates: the comparison prints no byte ratios for it, while another run with the
// same bytes keeps its own.
TEST(Comparison, ParameterServerRowHasNoByteRatios) {
  const std::string path = ::testing::TempDir() + "ps_ratios_test.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  {
    ResultStore store(path);
    fixture::RunSpec s;
    s.suite = "t";
    s.name = "topk";
    s.algorithm = "topk";
    s.dense_bytes = 400;
    s.collectives = {{"allgather", 1, {100, 100}}};
    fixture::write_run(store, s);
    s.name = "ps-asp";
    s.algorithm = "ps";
    fixture::write_run(store, s);
  }
  auto rows = compare_runs(load_runs(path, "t"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_GT(rows[0].payload_compression, 0);
  EXPECT_GT(rows[0].wire_ratio, 0);
  EXPECT_EQ(rows[1].payload_compression, 0);
  EXPECT_EQ(rows[1].wire_ratio, 0);
  const std::string md = render_markdown(rows);
  EXPECT_NE(md.find("A parameter server (ps) has no bytes, ratios or modeled seconds here"),
            std::string::npos)
      << md;
}

// Mixed precision is read from each run's resolved configuration and named under the table;
// a suite trained in fp32 (every run recorded before train.amp existed included) gets no line.
TEST(Comparison, LegendNamesTheRunsTrainedInMixedPrecision) {
  EXPECT_EQ(amp_of("name: x\ntrain:\n  amp: bf16\n"), "bf16");
  EXPECT_EQ(amp_of("name: x\ntrain: {batch_size: 8}\n"), "off");
  EXPECT_EQ(amp_of("not: [yaml"), "off");
  const std::string path = ::testing::TempDir() + "amp_legend_test.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  {
    ResultStore store(path);
    fixture::RunSpec s;
    s.suite = "t";
    s.name = "dense";
    s.algorithm = "dense";
    s.collectives = {{"allreduce", 1, {400, 400}}};
    fixture::write_run(store, s);
    s.name = "dense-bf16";
    s.amp = "bf16";
    fixture::write_run(store, s);
    s.name = "dense-fp16";
    s.amp = "fp16";
    s.batch_size = 32;
    fixture::write_run(store, s);
  }
  auto rows = compare_runs(load_runs(path, "t"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].amp, "off");
  EXPECT_EQ(rows[2].amp, "fp16");
  const std::string md = render_markdown(rows);
  EXPECT_NE(md.find("dense-bf16 bf16, dense-fp16 fp16; the other runs trained in fp32."),
            std::string::npos)
      << md;
  rows.erase(rows.begin() + 1, rows.end());
  EXPECT_EQ(render_markdown(rows).find("Mixed precision"), std::string::npos);
}

}  // namespace
}  // namespace cedar
