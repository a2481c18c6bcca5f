// cedar: the command-line entry point. Subcommands: run, suite, report, list.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "runner/cli_commands.h"
#include "runner/run_guard.h"

int main(int argc, char** argv) {
  cedar::install_signal_watch();
  CLI::App app{"cedar: communication-efficient distributed training experiments"};
  app.require_subcommand(1);
  app.set_version_flag("--version", cedar::version_string());

  cedar::RunArgs run_args;
  auto* run = app.add_subcommand("run", "train one experiment (alone or under mpirun -np N / srun)");
  run->add_option("experiment", run_args.experiment, "experiment YAML file")->required();
  run->add_option("--set", run_args.overrides, "override a key, e.g. --set train.epochs=2 (repeatable)");
  run->add_option("--db", run_args.db, "results database")->capture_default_str();
  run->add_flag("--quiet", run_args.quiet, "no progress lines");

  cedar::SuiteArgs suite_args;
  auto* suite = app.add_subcommand("suite", "run every combination of an experiment's grid, then print the comparison");
  suite->add_option("experiment", suite_args.experiment, "experiment YAML file with a grid: section")->required();
  suite->add_option("--set", suite_args.overrides, "override a key in every run (repeatable)");
  suite->add_option("--db", suite_args.db, "results database")->capture_default_str();
  suite->add_flag("--dry-run", suite_args.dry_run, "list the runs and their launch commands only");
  suite->add_flag("--quiet", suite_args.quiet, "no per-epoch progress lines from the runs");

  cedar::ReportArgs report_args;
  auto* report = app.add_subcommand("report", "comparison table of the runs in a results database");
  report->add_option("db", report_args.db, "results database")->required();
  report->add_option("--suite", report_args.suite, "only this suite");
  report->add_option("--format", report_args.format, "md, csv or tex")
      ->check(CLI::IsMember({"md", "csv", "tex"}))->capture_default_str();
  report->add_option("--target", report_args.target,
                     "test accuracy (0-1) for the time-to-target column and its speed-up vs dense")
      ->check(CLI::Range(0.0, 1.0));
  report->add_option("--claims", report_args.claims,
                     "evaluate the claims: section of this experiment file on the runs");
  report->add_option("--plots", report_args.plots,
                     "also write accuracy/loss plots (gnuplot SVG + PNG, with their .gp and data) here");

  auto* list = app.add_subcommand("list", "print registered models, datasets and algorithms with their parameters");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*run) return cedar::command_run(run_args);
    if (*suite) return cedar::command_suite(suite_args);
    if (*report) return cedar::command_report(report_args);
    if (*list) return cedar::command_list();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cedar: error: %s\n", e.what());
    return cedar::fail_job(2);
  }
  return 0;
}
