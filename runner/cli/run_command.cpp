#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "comm/mpi_communicator.h"
#include "config/experiment_config.h"
#include "runner/cli/commands.h"
#include "runner/run/experiment.h"
#include "runner/source_revision.h"

namespace cedar {

std::string version_string() {
  return source_version() + " (commit " + kSourceCommit +
         (kSourceDiff[0] ? std::string(", uncommitted changes sha256 ") + kSourceDiff : "") + ")";
}

int fail_job(int code) {
  if (launched_under_mpi()) {
    std::fflush(stderr);
    MpiCommunicator::abort_job(code);
  }
  return code;
}

int command_run(const RunArgs& args) {
  ExperimentConfig cfg = load_experiment(args.experiment, args.overrides);
  if (cfg.network.cluster == "virtual" && !std::getenv("CEDAR_CLUSTER_LINKS"))
    throw ConfigError(args.experiment +
                      ": network.cluster: virtual: its ranks are started by `cedar suite` on the "
                      "hosts of `cedar cluster up`; under your own mpirun set network.cluster: "
                      "none");
  RunOptions opts;
  opts.db_path = args.db;
  opts.quiet = args.quiet;
  opts.resume = args.resume;
  opts.results_mode = args.results_mode;
  RunOutcome out = run_experiment(cfg, opts);
  if (out.run_id >= 0) {
    const std::string where = out.results_path == opts.db_path
                                  ? "run " + std::to_string(out.run_id) + " in " + opts.db_path
                                  : "run " + out.uuid + " in " + out.results_path +
                                        ", for `cedar merge " + opts.db_path + "`";
    std::printf(
        "%-24s %-10s %-9s test acc %6.2f%% (%s)  wall %7.1f s  payload %10.3f MB (%s)  (%d "
        "ranks, %s)\n",
        cfg.name.c_str(), cfg.algorithm.c_str(), out.status.c_str(),
        100.0 * out.final_test_accuracy, out.evaluated_model.c_str(), out.wall_seconds,
        out.total_payload_bytes / 1e6, out.payload_of.c_str(), out.world_size, where.c_str());
    std::fflush(stdout);
  }
  return out.status == "completed" ? 0 : 3;
}

void add_run_command(CLI::App& app, Subcommands& out) {
  auto run_args = std::make_shared<RunArgs>();
  auto* run =
      app.add_subcommand("run", "train one experiment (alone or under mpirun -np N / srun)");
  run->add_option("experiment", run_args->experiment, "experiment YAML file")->required();
  run->add_option("--set", run_args->overrides,
                  "override a key, e.g. --set train.epochs=2 (repeatable)");
  run->add_option("--db", run_args->db, "results database")->capture_default_str();
  run->add_flag("--quiet", run_args->quiet, "no progress lines");
  run->add_flag("--resume", run_args->resume,
                "continue the latest failed run of this configuration from its checkpoint "
                "(a new run when there is none)");
  run->add_option("--results-mode", run_args->results_mode,
                  "auto, wal or shards: how the database is written (default: the experiment's "
                  "results.mode, auto)")
      ->check(CLI::IsMember({"auto", "wal", "shards"}));
  out.push_back({run, [run_args] { return command_run(*run_args); }});
}

}  // namespace cedar
