// cedar: the command-line entry point. Subcommands: run, list.
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

  auto* list = app.add_subcommand("list", "print registered models, datasets and algorithms with their parameters");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*run) return cedar::command_run(run_args);
    if (*list) return cedar::command_list();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cedar: error: %s\n", e.what());
    return cedar::fail_job(2);
  }
  return 0;
}
