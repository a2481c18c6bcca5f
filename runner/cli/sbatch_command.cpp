// `cedar sbatch`: writes the Slurm batch script of a suite (runner/suite/sbatch.h) into a job
// folder beside the results database and submits it with sbatch; --dry-run prints it instead,
// --wait waits for the job and then prints the comparison table.
#include <spawn.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>

#include "algorithms/algorithm.h"
#include "config/experiment_config.h"
#include "platform/process.h"
#include "reports/comparison.h"
#include "reports/uncommitted_runs.h"
#include "runner/cli/commands.h"
#include "runner/suite/launcher.h"
#include "runner/suite/preflight.h"
#include "runner/suite/sbatch.h"

namespace cedar {
namespace {

std::string absolute(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

// A fresh job folder: `base`, or base-2, base-3, ... when submitted twice within a second.
std::string make_job_dir(const std::string& base) {
  std::filesystem::create_directories(std::filesystem::path(base).parent_path());
  std::string dir = base;
  for (int k = 2; !std::filesystem::create_directory(dir); ++k)
    dir = base + "-" + std::to_string(k);
  return dir;
}

// Runs argv with its standard output read line by line (stderr passes through); returns the
// exit status (128+signal when killed).
int run_reading_lines(const std::vector<std::string>& argv,
                      const std::function<void(const std::string&)>& on_line) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("cannot create a pipe for " + argv[0]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  const pid_t pid = spawn_process(argv, &actions);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    throw std::runtime_error("cannot start " + argv[0] + " (is Slurm installed and on PATH? " +
                             "--dry-run prints the job script without submitting it)");
  }
  std::string pending;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1))
      on_line(pending.substr(0, eol));
  }
  if (!pending.empty()) on_line(pending);
  close(fds[0]);
  return wait_exit_status(pid);
}

}  // namespace

int command_sbatch(const SbatchArgs& args) {
  Suite suite = load_job_suite(args.experiment, {gradient_algorithm_names()}, args.overrides);
  check_sbatch_options(args.job, suite);
  // Every run's configuration, data, model and output folders are checked here, not minutes later
  // on a compute node (runner/suite/preflight.h; the job's `cedar suite` checks its run again
  // there). A dry run prints the script and what a submission would stop on.
  const PreflightReport check = preflight(suite, {args.db, {}, !args.skip_preflight});
  if (!check.configurations_ok() || (!check.ok() && !args.dry_run)) throw PreflightError(check);

  JobCommand cmd;
  cmd.cedar = self_executable();
  cmd.workdir = std::filesystem::current_path().string();
  cmd.experiment = absolute(args.experiment);
  cmd.db = absolute(args.db);
  cmd.overrides = args.overrides;
  cmd.results_mode = args.results_mode.empty()
                         ? load_experiment(suite.file, args.overrides).results.mode
                         : args.results_mode;
  cmd.job_dir = job_dir_for(cmd.db, suite.name, static_cast<long>(std::time(nullptr)));
  cmd.skip_preflight = args.skip_preflight;
  if (args.dry_run) {
    std::fputs(job_script(args.job, cmd, suite).c_str(), stdout);
    if (!check.ok())
      std::fprintf(stderr, "preflight: %s; a submission would stop here:\n%s",
                   check.summary().c_str(), check.render().c_str());
    return 0;
  }

  cmd.job_dir = make_job_dir(cmd.job_dir);
  const std::string script_path = cmd.job_dir + "/job.sh";
  {
    std::ofstream out(script_path);
    out << job_script(args.job, cmd, suite);
    if (!out) throw std::runtime_error("cannot write " + script_path);
  }
  std::filesystem::permissions(script_path, std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add);
  std::printf("job script: %s\n", script_path.c_str());
  std::fflush(stdout);

  std::vector<std::string> argv = {"sbatch", "--parsable"};
  if (args.wait) argv.push_back("--wait");
  argv.push_back(script_path);
  std::string job_id;
  const int rc = run_reading_lines(argv, [&](const std::string& line) {
    if (!job_id.empty()) return;
    job_id = line.substr(0, line.find(';'));  // "ID" or "ID;cluster"
    const std::string tasks =
        args.job.array ? ", array tasks 0-" + std::to_string(suite.runs.size() - 1) : std::string();
    std::printf("submitted job %s: suite '%s', %zu run(s)%s\n", job_id.c_str(), suite.name.c_str(),
                suite.runs.size(), tasks.c_str());
    std::printf("logs: %s/slurm-%s%s.out and run-*.log\n", cmd.job_dir.c_str(), job_id.c_str(),
                args.job.array ? "_<task>" : "");
    if (args.wait) std::printf("waiting for job %s to end...\n", job_id.c_str());
    std::fflush(stdout);
  });
  if (job_id.empty()) {
    std::fprintf(stderr, "cedar sbatch: sbatch failed (exit status %d); the job script is %s\n", rc,
                 script_path.c_str());
    return rc ? rc : 1;
  }
  if (!args.wait) {
    std::printf("results: cedar report %s --suite %s\n", cmd.db.c_str(), suite.name.c_str());
    return 0;
  }
  std::printf("job %s ended with exit status %d\n", job_id.c_str(), rc);
  merge_if_sharded(cmd.db, cmd.results_mode, stdout);  // what the tasks left (e.g. one killed)
  if (!std::filesystem::exists(cmd.db)) {
    std::fprintf(stderr, "cedar sbatch: the job wrote no results to %s; see the logs in %s\n",
                 cmd.db.c_str(), cmd.job_dir.c_str());
    return rc ? rc : 1;
  }
  const double target = load_experiment(suite.file, args.overrides).train.target_accuracy;
  auto rows = compare_runs(load_runs(cmd.db, suite.name, target), target);
  std::printf("\n## %s\n\n%s", suite.name.c_str(),
              render_markdown_marked(rows, load_uncommitted_runs(cmd.db, suite.name)).c_str());
  std::fflush(stdout);
  return rc;
}

void add_sbatch_command(CLI::App& app, Subcommands& out) {
  auto sbatch_args = std::make_shared<SbatchArgs>();
  auto* sbatch = app.add_subcommand("sbatch",
                                    "write a Slurm batch script that runs a suite (one job, or one "
                                    "array task per run) and submit it");
  sbatch
      ->add_option("experiment", sbatch_args->experiment,
                   "experiment YAML file with a grid: section")
      ->required();
  sbatch->add_option("--nodes", sbatch_args->job.nodes, "nodes per job")->required();
  sbatch->add_option("--ntasks-per-node", sbatch_args->job.ntasks_per_node, "MPI ranks per node")
      ->required();
  sbatch
      ->add_option("--gpus-per-node", sbatch_args->job.gpus_per_node,
                   "GPUs per node (0: none requested)")
      ->capture_default_str();
  sbatch->add_option("--partition", sbatch_args->job.partition,
                     "partition (default: the cluster's)");
  sbatch->add_option("--time", sbatch_args->job.time,
                     "time limit, HH:MM:SS or D-HH:MM:SS (default: the partition's)");
  sbatch
      ->add_option("--grace", sbatch_args->job.grace_seconds,
                   "seconds before the time limit at which the job requeues itself (0: never)")
      ->capture_default_str();
  sbatch->add_flag("--array", sbatch_args->job.array, "a job array: one task per run of the suite");
  sbatch
      ->add_option("--db", sbatch_args->db,
                   "results database (the job folder goes beside it, in slurm/)")
      ->capture_default_str();
  sbatch->add_option("--set", sbatch_args->overrides, "override a key in every run (repeatable)");
  sbatch->add_flag("--dry-run", sbatch_args->dry_run,
                   "print the job script (and on stderr what the preflight would stop a "
                   "submission on); write and submit nothing");
  sbatch->add_flag("--wait", sbatch_args->wait,
                   "wait for the job to end, then print the comparison table");
  sbatch
      ->add_option("--results-mode", sbatch_args->results_mode,
                   "auto, wal or shards for every run of the job (default: the experiment's "
                   "results.mode, auto: shards on a shared filesystem)")
      ->check(CLI::IsMember({"auto", "wal", "shards"}));
  sbatch->add_flag("--skip-preflight", sbatch_args->skip_preflight,
                   "submit without first checking every run's data files, model, batch against "
                   "the data, and output folders here, and run the job's suites without it");
  out.push_back({sbatch, [sbatch_args] { return command_sbatch(*sbatch_args); }});
}

}  // namespace cedar
