// cedar: the command-line entry point. Subcommands: run, suite, sbatch, report, merge, export,
// project, list, data (list, fetch), cluster (up, down, status), network (calibrate, show); each
// declared by its own file (runner/cli/commands.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "runner/cli/commands.h"
#include "runner/cli/torch_cuda.h"
#include "runner/train/provenance.h"
#include "runner/train/run_guard.h"

namespace {

int run_cedar(int argc, char** argv) {
  try {
    cedar::load_torch_cuda_where_a_driver_is();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cedar: error: %s\n", e.what());
    return 2;
  }
  // Line-buffered even into a pipe or file: the tables on stdout and the messages on stderr then
  // interleave as whole lines when both go to one place (`2>&1`), not at 4 KiB block boundaries.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  cedar::install_signal_watch();
  CLI::App app{"cedar: communication-efficient distributed training experiments"};
  app.require_subcommand(1);
  app.set_version_flag("--version", cedar::version_string());

  cedar::Subcommands commands;
  cedar::add_run_command(app, commands);
  cedar::add_suite_command(app, commands);
  cedar::add_sbatch_command(app, commands);
  cedar::add_report_command(app, commands);
  cedar::add_merge_command(app, commands);
  cedar::add_export_command(app, commands);
  cedar::add_project_command(app, commands);
  cedar::add_network_commands(app, commands);
  cedar::add_list_command(app, commands);
  cedar::add_data_commands(app, commands);
  cedar::add_cluster_commands(app, commands);
  cedar::add_trace_commands(app, commands);

  // mpirun's spelling `-np N` (CLI11 reads a single dash as one-letter options: -n p).
  static char np[] = "--np";
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-np") == 0) argv[i] = np;
  CLI11_PARSE(app, argc, argv);
  cedar::set_command_line(argc, argv);
  try {
    for (const auto& command : commands)
      if (*command.parsed) return command.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cedar: error: %s\n", e.what());
    return cedar::fail_job(2);
  }
  return 0;
}

}  // namespace

// Every command's objects (databases, communicators, threads) are gone when run_cedar returns;
// what is left are static objects, LibTorch's above all, whose destructors unregister each of its
// operators: a quarter of the CPU time of a short run. The process ends without them, once the
// C streams are flushed and the quick-exit handlers have run (MPI_Finalize among them,
// comm/mpi_communicator.cpp).
int main(int argc, char** argv) {
  const int status = run_cedar(argc, argv);
  std::fflush(nullptr);
  std::quick_exit(status);
}
