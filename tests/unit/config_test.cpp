// Experiment configuration: defaults, overrides, and errors that name file:line:column and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/experiment_config.h"
#include "config/step_range.h"
#include "runner/train/lr_schedule.h"

namespace cedar {
namespace {

std::string write_yaml(const std::string& name, const std::string& text) {
  auto path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string error_of(const std::string& path, std::vector<std::string> overrides = {}) {
  try {
    load_experiment(path, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsAndValues) {
  auto p = write_yaml("ok.yaml",
                      "name: demo\nmodel: {name: resnet32}\ntrain:\n  epochs: 3\n  batch_size: 64\n"
                      "algorithm:\n  name: dense\n");
  ExperimentConfig c = load_experiment(p);
  EXPECT_EQ(c.name, "demo");
  EXPECT_EQ(c.model.name, "resnet32");
  EXPECT_EQ(c.train.epochs, 3);
  EXPECT_EQ(c.train.batch_size, 64);
  EXPECT_EQ(c.algorithm, "dense");
  EXPECT_DOUBLE_EQ(c.optimizer.momentum, 0.9);  // default
}

TEST(Config, OverridesReplaceValuesAndCreateSections) {
  auto p = write_yaml("ov.yaml", "train: {epochs: 3}\n");
  ExperimentConfig c =
      load_experiment(p, {"train.epochs=7", "algorithm.name=dense", "optimizer.lr=0.05"});
  EXPECT_EQ(c.train.epochs, 7);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.05);
}

TEST(Config, UnknownKeyNamesFileLineColumnAndKey) {
  auto p = write_yaml("typo.yaml", "train:\n  epochs: 2\n  bach_size: 64\n");
  std::string e = error_of(p);
  EXPECT_NE(e.find(p + ":3:3"), std::string::npos) << e;
  EXPECT_NE(e.find("train.bach_size"), std::string::npos) << e;
  EXPECT_NE(e.find("batch_size"), std::string::npos) << e;  // lists the known keys
}

TEST(Config, WrongTypeNamesTheKey) {
  auto p = write_yaml("type.yaml", "train:\n  epochs: two\n");
  std::string e = error_of(p);
  EXPECT_NE(e.find(p + ":2:11"), std::string::npos) << e;
  EXPECT_NE(e.find("train.epochs: expected an integer, got 'two'"), std::string::npos) << e;
}

TEST(Config, FractionalIntegerIsRejected) {
  auto p = write_yaml("frac.yaml", "train:\n  batch_size: 1.5\n");
  EXPECT_NE(error_of(p).find("expected an integer"), std::string::npos);
}

TEST(Config, OutOfRangeValues) {
  auto p = write_yaml("range.yaml", "optimizer:\n  lr: -0.1\n");
  std::string e = error_of(p);
  EXPECT_NE(e.find(p + ":2:7"), std::string::npos) << e;
  EXPECT_NE(e.find("optimizer.lr: value -0.1 is out of range (0, inf)"), std::string::npos) << e;
  auto q = write_yaml("mom.yaml", "optimizer: {momentum: 1.0}\n");
  EXPECT_NE(error_of(q).find("optimizer.momentum"), std::string::npos);
}

TEST(Config, BadChoiceListsAllowedValues) {
  auto p = write_yaml("choice.yaml", "optimizer: {schedule: linear}\n");
  std::string e = error_of(p);
  EXPECT_NE(e.find("'linear' is not one of constant|step|cosine"), std::string::npos) << e;
}

TEST(Config, AllreduceSchemeDefaultsToTheLibraryAndAnUnknownOneIsNamed) {
  EXPECT_EQ(load_experiment(write_yaml("ar.yaml", "train: {epochs: 1}\n")).network.allreduce,
            "library");
  auto ok = write_yaml("ar_ok.yaml", "network: {allreduce: halving_doubling}\n");
  EXPECT_EQ(load_experiment(ok).network.allreduce, "halving_doubling");
  auto p = write_yaml("ar_bad.yaml", "network:\n  allreduce: butterfly\n");
  std::string e = error_of(p);
  EXPECT_NE(e.find(p + ":2:14"), std::string::npos) << e;
  EXPECT_NE(e.find("network.allreduce"), std::string::npos) << e;
  EXPECT_NE(e.find("'butterfly' is not one of library|ring|halving_doubling|tree|two_level"),
            std::string::npos)
      << e;
}

TEST(Config, ExchangeScheduleDefaultsToFifoAndPriorityTakesASliceSize) {
  const ExperimentConfig d = load_experiment(write_yaml("sched.yaml", "train: {epochs: 1}\n"));
  EXPECT_EQ(d.train.schedule, "fifo");
  EXPECT_EQ(d.train.slice_kb, 4000);
  const ExperimentConfig p = load_experiment(
      write_yaml("sched_p.yaml", "train: {overlap: true, schedule: priority, slice_kb: 160}\n"));
  EXPECT_EQ(p.train.schedule, "priority");
  EXPECT_EQ(p.train.slice_kb, 160);
  // Both are part of what runs: the resolved configuration holds them.
  const std::string resolved = resolved_yaml(p, "{}");
  EXPECT_NE(resolved.find("schedule: priority"), std::string::npos) << resolved;
  EXPECT_NE(resolved.find("slice_kb: 160"), std::string::npos) << resolved;
}

TEST(Config, StepScheduleNeedsMilestones) {
  auto p = write_yaml("step.yaml", "optimizer: {schedule: step}\n");
  EXPECT_NE(error_of(p).find("optimizer.milestones"), std::string::npos);
}

TEST(Config, TheBackendIsChosenIndependentlyOfTheDevice) {
  // MPI carries CUDA tensors too (ranks sharing a GPU, clusters without NCCL).
  ExperimentConfig c =
      load_experiment(write_yaml("mpi_cuda.yaml", "train: {device: cuda, backend: mpi}\n"));
  EXPECT_EQ(c.train.device, "cuda");
  EXPECT_EQ(c.train.backend, "mpi");
  EXPECT_EQ(load_experiment(write_yaml("default_backend.yaml", "train: {}\n")).train.backend,
            "auto");
  // NCCL without a GPU is refused where it is written, and through an override too.
  auto cpu = write_yaml("nccl_cpu.yaml", "train: {device: cpu}\n");
  EXPECT_NE(
      error_of(cpu, {"train.backend=nccl"}).find("train.backend: nccl needs train.device cuda"),
      std::string::npos)
      << error_of(cpu, {"train.backend=nccl"});
  EXPECT_EQ(error_of(cpu, {"train.backend=nccl", "train.device=auto"}), "");
}

TEST(Config, OverrideErrorsNameTheOverride) {
  auto p = write_yaml("base.yaml", "train: {epochs: 1}\n");
  std::string e = error_of(p, {"train.epochs=-3"});
  EXPECT_NE(e.find("--set train.epochs"), std::string::npos) << e;
  EXPECT_NE(error_of(p, {"novalue"}).find("expected key=value"), std::string::npos);
}

TEST(Config, SyntaxErrorAndMissingFile) {
  auto p = write_yaml("syntax.yaml", "train: {epochs: 1\n");
  std::string e = error_of(p);
  EXPECT_NE(e.find(p + ":"), std::string::npos) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
  EXPECT_NE(error_of("/nonexistent/x.yaml").find("/nonexistent/x.yaml: cannot open"),
            std::string::npos);
}

TEST(Config, ResolvedYamlRoundTrips) {
  auto p = write_yaml(
      "rt.yaml", "name: a\ntrain: {epochs: 4}\noptimizer: {milestones: [1, 2], schedule: step}\n");
  ExperimentConfig c = load_experiment(p);
  std::string y = resolved_yaml(c, "{}");
  auto q = write_yaml("rt2.yaml", y);
  ExperimentConfig d = load_experiment(q);
  EXPECT_EQ(d.train.epochs, 4);
  EXPECT_EQ(d.optimizer.milestones, (std::vector<double>{1, 2}));
  EXPECT_EQ(resolved_yaml(d, "{}"), y);
}

TEST(Config, TraceKeysAreReadCheckedAndNotPartOfTheResolvedConfiguration) {
  auto p = write_yaml("trace.yaml", "train:\n  epochs: 1\n  trace_steps: 3-7x\n");
  std::string e = error_of(p);
  EXPECT_NE(e.find(p + ":3:16: train.trace_steps: '3-7x'"), std::string::npos) << e;
  EXPECT_NE(error_of(p, {"train.trace_steps=9-4"}).find("--set train.trace_steps"),
            std::string::npos);
  EXPECT_NE(error_of(p, {"train.trace_steps=9-4"}).find("ends before it starts"),
            std::string::npos);
  EXPECT_NE(error_of(p, {"train.trace_steps=-2"}).find("train.trace_steps"), std::string::npos);
  ExperimentConfig c = load_experiment(p, {"train.trace=/tmp/t.json", "train.trace_steps=12"});
  EXPECT_EQ(c.train.trace, "/tmp/t.json");
  EXPECT_EQ(c.train.trace_steps, "12");
  EXPECT_EQ(load_experiment(p, {"train.trace_steps=2-5"}).train.trace_steps, "2-5");
  // Where the timeline goes is not what runs: the resolved configuration (and so the
  // fingerprint `cedar suite` and resume match runs by) is that of the run without it.
  const std::string traced = resolved_yaml(c, "{}");
  EXPECT_EQ(traced, resolved_yaml(load_experiment(p, {"train.trace_steps=1"}), "{}"));
  EXPECT_EQ(traced.find("trace"), std::string::npos) << traced;
  EXPECT_EQ(ExperimentConfig{}.train.trace, "");
  EXPECT_EQ(ExperimentConfig{}.train.trace_steps, "10-14");
}

TEST(Config, FusionKeyIsRecordedOnlyAwayFromItsDefault) {
  auto p = write_yaml("fusion.yaml", "train: {epochs: 1}\n");
  const ExperimentConfig plain = load_experiment(p);
  EXPECT_EQ(plain.train.fusion, "size");
  // At the default the resolved configuration (the run's fingerprint) is what it was before the
  // key existed; any other value is recorded and reads back.
  const std::string unset = resolved_yaml(plain, "{}");
  EXPECT_EQ(unset.find("fusion"), std::string::npos) << unset;
  EXPECT_EQ(resolved_yaml(load_experiment(p, {"train.fusion=size"}), "{}"), unset);
  for (const char* mode : {"mgwfbp", "optimal", "auto"}) {
    const ExperimentConfig c = load_experiment(p, {std::string("train.fusion=") + mode});
    EXPECT_EQ(c.train.fusion, mode);
    const std::string y = resolved_yaml(c, "{}");
    EXPECT_NE(y.find(std::string("fusion: ") + mode), std::string::npos) << y;
    EXPECT_EQ(load_experiment(write_yaml("fusion_rt.yaml", y)).train.fusion, mode);
  }
  const std::string e = error_of(p, {"train.fusion=fastest"});
  EXPECT_NE(e.find("--set train.fusion"), std::string::npos) << e;
  EXPECT_NE(e.find("'fastest' is not one of size|mgwfbp|optimal|auto"), std::string::npos) << e;
}

// Keys added after runs were recorded leave those runs' fingerprints as they were at their
// defaults (network.allreduce: library, train.schedule: fifo, train.slice_kb: 4000), and are
// recorded, and read back, at any other value.
TEST(Config, ExchangeKeysAreRecordedOnlyAwayFromTheirDefaults) {
  auto p = write_yaml("exchange_keys.yaml", "train: {epochs: 1}\n");
  const std::string plain = resolved_yaml(load_experiment(p), "{}");
  for (const char* key : {"allreduce", "schedule: fifo", "slice_kb"})
    EXPECT_EQ(plain.find(key), std::string::npos) << key << " in\n" << plain;
  EXPECT_EQ(resolved_yaml(load_experiment(p, {"network.allreduce=library", "train.schedule=fifo",
                                              "train.slice_kb=4000"}),
                          "{}"),
            plain);
  const ExperimentConfig c = load_experiment(p, {"network.allreduce=tree", "train.overlap=true",
                                                 "train.schedule=priority", "train.slice_kb=160"});
  const std::string y = resolved_yaml(c, "{}");
  for (const char* kv : {"allreduce: tree", "schedule: priority", "slice_kb: 160"})
    EXPECT_NE(y.find(kv), std::string::npos) << kv << " not in\n" << y;
  const ExperimentConfig back = load_experiment(write_yaml("exchange_keys_rt.yaml", y));
  EXPECT_EQ(back.network.allreduce, "tree");
  EXPECT_EQ(back.train.schedule, "priority");
  EXPECT_EQ(back.train.slice_kb, 160);
  // A slice size away from its default is recorded under fifo too (it is the value of a key).
  EXPECT_NE(resolved_yaml(load_experiment(p, {"train.slice_kb=500"}), "{}").find("slice_kb: 500"),
            std::string::npos);
}

TEST(StepRange, RangesAndSingleSteps) {
  EXPECT_EQ(parse_step_range("10-14").first, 10);
  EXPECT_EQ(parse_step_range("10-14").last, 14);
  EXPECT_EQ(parse_step_range("10-14").size(), 5);
  EXPECT_TRUE(parse_step_range("7").contains(7));
  EXPECT_FALSE(parse_step_range("7").contains(8));
  for (const char* bad : {"", "-", "3-", "-3", "a", "1-2-3", "5-4", " 5"})
    EXPECT_THROW(parse_step_range(bad), std::invalid_argument) << bad;
}

TEST(LrSchedule, WarmupStepCosineAndScaling) {
  OptimizerConfig o;
  o.lr = 0.1;
  o.schedule = "step";
  o.milestones = {2, 4};
  o.gamma = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate(o, 0.1, 1.9, 6), 0.1);
  EXPECT_NEAR(learning_rate(o, 0.1, 2.0, 6), 0.01, 1e-12);
  EXPECT_NEAR(learning_rate(o, 0.1, 5.0, 6), 0.001, 1e-12);
  o.schedule = "cosine";
  EXPECT_NEAR(learning_rate(o, 0.1, 3.0, 6), 0.05, 1e-12);
  o.warmup_epochs = 1;
  o.warmup_start_factor = 0.1;
  EXPECT_NEAR(learning_rate(o, 0.1, 0.5, 6), 0.1 * (0.1 + 0.9 * 0.5), 1e-12);
  o.lr_scaling = "linear";
  o.base_batch = 128;
  EXPECT_NEAR(scaled_base_lr(o, 4, 128), 0.4, 1e-12);
  o.lr_scaling = "sqrt";
  EXPECT_NEAR(scaled_base_lr(o, 4, 128), 0.2, 1e-12);
}

}  // namespace
}  // namespace cedar
