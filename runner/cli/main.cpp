// cedar: the command-line entry point. Subcommands: run, suite, sbatch, report, merge, project,
// list, data (list, fetch), cluster (up, down, status), network (calibrate).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>

#include "runner/cli/commands.h"
#include "runner/train/provenance.h"
#include "runner/train/run_guard.h"

int main(int argc, char** argv) {
  // Line-buffered even into a pipe or file: the tables on stdout and the messages on stderr then
  // interleave as whole lines when both go to one place (`2>&1`), not at 4 KiB block boundaries.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  cedar::install_signal_watch();
  CLI::App app{"cedar: communication-efficient distributed training experiments"};
  app.require_subcommand(1);
  app.set_version_flag("--version", cedar::version_string());

  cedar::RunArgs run_args;
  auto* run =
      app.add_subcommand("run", "train one experiment (alone or under mpirun -np N / srun)");
  run->add_option("experiment", run_args.experiment, "experiment YAML file")->required();
  run->add_option("--set", run_args.overrides,
                  "override a key, e.g. --set train.epochs=2 (repeatable)");
  run->add_option("--db", run_args.db, "results database")->capture_default_str();
  run->add_flag("--quiet", run_args.quiet, "no progress lines");
  run->add_flag("--resume", run_args.resume,
                "continue the latest failed run of this configuration from its checkpoint "
                "(a new run when there is none)");
  run->add_option("--results-mode", run_args.results_mode,
                  "auto, wal or shards: how the database is written (default: the experiment's "
                  "results.mode, auto)")
      ->check(CLI::IsMember({"auto", "wal", "shards"}));

  cedar::SuiteArgs suite_args;
  auto* suite = app.add_subcommand(
      "suite", "run every combination of an experiment's grid, then print the comparison");
  suite
      ->add_option("experiment", suite_args.experiment, "experiment YAML file with a grid: section")
      ->required();
  suite->add_option("--set", suite_args.overrides, "override a key in every run (repeatable)");
  suite->add_option("--db", suite_args.db, "results database")->capture_default_str();
  suite->add_flag("--dry-run", suite_args.dry_run,
                  "list the runs and their launch commands, then what the preflight would stop a "
                  "launch on; launch nothing");
  suite->add_flag("--quiet", suite_args.quiet, "no per-epoch progress lines from the runs");
  suite
      ->add_option("--only", suite_args.only,
                   "only the run with this index (0-based, in --dry-run's order; one Slurm array "
                   "task's run)")
      ->check(CLI::NonNegativeNumber);
  suite
      ->add_option("--results-mode", suite_args.results_mode,
                   "auto, wal or shards: how the runs write the database (default: the "
                   "experiment's results.mode, auto); shards are merged at the end")
      ->check(CLI::IsMember({"auto", "wal", "shards"}));
  suite->add_flag("--skip-preflight", suite_args.skip_preflight,
                  "launch without first checking every run's data files, model, batch against "
                  "the data, and output folders (configurations are always checked)");

  cedar::SbatchArgs sbatch_args;
  auto* sbatch = app.add_subcommand("sbatch",
                                    "write a Slurm batch script that runs a suite (one job, or one "
                                    "array task per run) and submit it");
  sbatch
      ->add_option("experiment", sbatch_args.experiment,
                   "experiment YAML file with a grid: section")
      ->required();
  sbatch->add_option("--nodes", sbatch_args.job.nodes, "nodes per job")->required();
  sbatch->add_option("--ntasks-per-node", sbatch_args.job.ntasks_per_node, "MPI ranks per node")
      ->required();
  sbatch
      ->add_option("--gpus-per-node", sbatch_args.job.gpus_per_node,
                   "GPUs per node (0: none requested)")
      ->capture_default_str();
  sbatch->add_option("--partition", sbatch_args.job.partition,
                     "partition (default: the cluster's)");
  sbatch->add_option("--time", sbatch_args.job.time,
                     "time limit, HH:MM:SS or D-HH:MM:SS (default: the partition's)");
  sbatch
      ->add_option("--grace", sbatch_args.job.grace_seconds,
                   "seconds before the time limit at which the job requeues itself (0: never)")
      ->capture_default_str();
  sbatch->add_flag("--array", sbatch_args.job.array, "a job array: one task per run of the suite");
  sbatch
      ->add_option("--db", sbatch_args.db,
                   "results database (the job folder goes beside it, in slurm/)")
      ->capture_default_str();
  sbatch->add_option("--set", sbatch_args.overrides, "override a key in every run (repeatable)");
  sbatch->add_flag("--dry-run", sbatch_args.dry_run,
                   "print the job script (and on stderr what the preflight would stop a "
                   "submission on); write and submit nothing");
  sbatch->add_flag("--wait", sbatch_args.wait,
                   "wait for the job to end, then print the comparison table");
  sbatch
      ->add_option("--results-mode", sbatch_args.results_mode,
                   "auto, wal or shards for every run of the job (default: the experiment's "
                   "results.mode, auto: shards on a shared filesystem)")
      ->check(CLI::IsMember({"auto", "wal", "shards"}));
  sbatch->add_flag("--skip-preflight", sbatch_args.skip_preflight,
                   "submit without first checking every run's data files, model, batch against "
                   "the data, and output folders here, and run the job's suites without it");

  cedar::ReportArgs report_args;
  auto* report = app.add_subcommand("report", "comparison table of the runs in a results database");
  report->add_option("db", report_args.db, "results database (not with --regenerate)");
  report->add_option("--suite", report_args.suite, "only this suite");
  report->add_option("--format", report_args.format, "md, csv or tex")
      ->check(CLI::IsMember({"md", "csv", "tex"}))
      ->capture_default_str();
  report
      ->add_option("--target", report_args.target,
                   "test accuracy (0-1) for the time-to-target column and its speed-up vs dense")
      ->check(CLI::Range(0.0, 1.0));
  report->add_option("--claims", report_args.claims,
                     "evaluate the claims: section of this experiment file on the runs");
  report->add_option(
      "--plots", report_args.plots,
      "also write accuracy/loss plots (gnuplot SVG + PNG, with their .gp and data) here");
  report->add_flag(
      "--crossover", report_args.crossover,
      "also when each run beats dense SGD: time per epoch over a bandwidth sweep and the "
      "crossover bandwidth (α–β model from its measured compute and collectives)");
  report->add_option("--networks", report_args.networks,
                     "YAML file of network profiles ({name, alpha, beta | bandwidth_gbps}) besides "
                     "the built-in ones");
  report
      ->add_option("--workers", report_args.workers,
                   "crossover: worker counts besides the measured one")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  report
      ->add_option("--latency-profile", report_args.latency_profile,
                   "crossover: profile whose latency α the bandwidth sweep keeps")
      ->capture_default_str();
  report->add_option(
      "--document", report_args.document,
      "also write the whole report (setting, commands, wall-clock, tables, claims and their "
      "history, crossover, plots, provenance) as one markdown file; plots go to <name>-plots/ "
      "and the suite's runs as SQL to <name>.sql.gz beside it");
  report
      ->add_option(
          "--findings", report_args.findings,
          "--document: hand-written markdown (e.g. why a claim did not reproduce) to include")
      ->check(CLI::ExistingFile);
  report
      ->add_option("--regenerate", report_args.regenerate,
                   "write a --document again from the results dump beside it (DOC.sql.gz), "
                   "with the arguments it records")
      ->check(CLI::ExistingFile);
  report->add_option("--output-dir", report_args.output_dir,
                     "--regenerate: write the document and its plots' data and scripts here (no "
                     "gnuplot), e.g. to compare them with the committed ones");
  report->add_flag("--levels", report_args.levels,
                   "also the bytes per level (intra, inter) of runs with hierarchical exchanges, "
                   "per step and per run");
  report->add_flag("--staleness", report_args.staleness,
                   "also the staleness distribution of parameter-server runs' applied updates");
  report->add_flag("--provenance", report_args.provenance,
                   "also print each run's command line, library versions, CPU / GPU and threads");
  report
      ->add_option("--results-mode", report_args.results_mode,
                   "auto, wal or shards: how the database is written; closed shards are merged "
                   "first either way")
      ->check(CLI::IsMember({"auto", "wal", "shards"}))
      ->capture_default_str();

  cedar::MergeArgs merge_args;
  auto* merge = app.add_subcommand(
      "merge",
      "fold the closed shards of a database (<db>.shards/, written in results mode shards) into "
      "it: one transaction per shard, idempotent, one merge at a time across hosts");
  merge->add_option("db", merge_args.db, "results database")->required();
  merge
      ->add_option("--results-mode", merge_args.results_mode,
                   "auto, wal or shards: the journal the main database is written through")
      ->check(CLI::IsMember({"auto", "wal", "shards"}))
      ->capture_default_str();
  merge
      ->add_option("--wait", merge_args.wait_seconds,
                   "seconds to wait while another merge holds the lock")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  merge
      ->add_option("--stale-seconds", merge_args.stale_seconds,
                   "a shard whose writer on another host has not refreshed its lock for this "
                   "long is closed (on this host: when its process is gone)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  cedar::ProjectArgs project_args;
  auto* project = app.add_subcommand(
      "project", "time per epoch of each run projected to more workers (α–β model)");
  project->add_option("db", project_args.db, "results database")->required();
  project->add_option("--suite", project_args.suite, "only this suite");
  project->add_option("--run-id", project_args.run_id, "only this run (runs.id)");
  project->add_option("--workers", project_args.workers, "worker counts, e.g. 8,64,256")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  project
      ->add_option("--network", project_args.network,
                   "network profile (1gbe, 10gbe, 25gbe, 100gbe, ib-hdr, or one in --networks)")
      ->capture_default_str();
  project->add_option("--intra-network", project_args.intra_network,
                      "profile of the traffic inside a node (level intra) of runs with levels "
                      "(default: the one each run recorded, network.intra_profile)");
  project->add_option("--format", project_args.format, "md or csv")
      ->check(CLI::IsMember({"md", "csv"}))
      ->capture_default_str();

  project->add_option("--networks", project_args.networks,
                      "YAML file of network profiles besides the built-in ones (e.g. one "
                      "`cedar network calibrate` wrote); --network and --intra-network may name "
                      "them");

  cedar::NetworkCalibrateArgs calibrate_args;
  auto* network = app.add_subcommand("network", "network profiles: calibrate, show");
  network->require_subcommand(1);
  auto* calibrate = network->add_subcommand(
      "calibrate",
      "time allreduce, allgather, allgatherv, broadcast and sendrecv over a sweep of sizes on the "
      "ranks it runs on (under mpirun -np N, or --cluster virtual), fit alpha and beta per "
      "collective and rank count, and write them as a network profile");
  calibrate->add_option("--out", calibrate_args.out, "profile file to write (YAML)")->required();
  calibrate->add_option("--name", calibrate_args.name, "the profile's name")->required();
  calibrate
      ->add_option("--sizes", calibrate_args.sizes,
                   "bytes per call (allgather[v]: per rank), multiples of 4, e.g. 4KiB,1MiB")
      ->delimiter(',')
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  calibrate
      ->add_option("--world-sizes", calibrate_args.world_sizes,
                   "rank counts P to fit at, each timed on the first P ranks (default: 2, 4, 8, "
                   "... and all)")
      ->delimiter(',')
      ->check(CLI::Range(2, 1 << 24));
  calibrate->add_option("--reps", calibrate_args.reps, "timed loops per size (median kept)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  calibrate->add_option("--warmup", calibrate_args.warmup, "untimed calls per size")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  calibrate->add_option("--measured-on", calibrate_args.measured_on,
                        "where it is measured, free text (default: the ranks' hosts and the "
                        "date; on the virtual cluster its links)");
  calibrate
      ->add_option("--cluster", calibrate_args.cluster,
                   "virtual: start on the cluster of `cedar cluster up` instead of running "
                   "under the caller's mpirun")
      ->check(CLI::IsMember({"none", "virtual"}));
  calibrate
      ->add_option("-n,--np", calibrate_args.np, "--cluster virtual: ranks (default: all slots)")
      ->check(CLI::Range(2, 1 << 16));

  std::string show_file;
  auto* network_show = network->add_subcommand(
      "show", "print the profiles of a networks file as cedar reads them (fits per collective)");
  network_show->add_option("file", show_file, "YAML file of network profiles")
      ->required()
      ->check(CLI::ExistingFile);

  auto* list = app.add_subcommand(
      "list", "print registered models, datasets and algorithms with their parameters");

  cedar::DataArgs data_args;
  auto* data = app.add_subcommand("data", "the data sets cedar can download: list, fetch");
  data->require_subcommand(1);
  auto* data_list = data->add_subcommand(
      "list", "every data set cedar can fetch: what it is, its size, where it goes, if present");
  data_list->add_option("--root", data_args.root, "data root")->capture_default_str();
  auto* data_fetch = data->add_subcommand(
      "fetch",
      "download a data set, verify its checksums and unpack it under the data root (nothing to "
      "do when it is already there)");
  data_fetch->add_option("name", data_args.name, "data set (cedar data list)")->required();
  data_fetch->add_option("--root", data_args.root, "data root")->capture_default_str();
  data_fetch->add_option("--from", data_args.from,
                         "the archive already downloaded (a path or URL; for several files a "
                         "folder or base URL holding them), verified the same way");
  data_fetch
      ->add_option("--mirror", data_args.mirror,
                   "base URL replacing the official ones: files at <mirror>/<name>/<file>")
      ->envname("CEDAR_DATA_MIRROR");

  cedar::ClusterArgs cluster_args;
  auto* cluster = app.add_subcommand(
      "cluster",
      "a virtual cluster on this machine (root): hosts as network namespaces on one bridge, each "
      "link shaped to a rate in both directions; `cedar suite` runs on it with network.cluster: "
      "virtual");
  cluster->require_subcommand(1);
  auto* cluster_up = cluster->add_subcommand(
      "up",
      "create the hosts, bridge, veth pairs and tbf shaping, and write the hostfile, rsh agent "
      "and state (refused while one is up; leftovers of a killed one are removed first)");
  cluster_up->add_option("--hosts", cluster_args.hosts, "virtual hosts (network namespaces)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cluster_up
      ->add_option("--ranks-per-host", cluster_args.ranks_per_host,
                   "MPI slots per host (network.ranks_per_node of its runs)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cluster_up
      ->add_option("--bandwidth", cluster_args.bandwidth,
                   "rate of each host's link, each direction (tc units: 100mbit, 1gbit, ...)")
      ->capture_default_str();
  cluster_up
      ->add_option("--burst", cluster_args.burst,
                   "tbf bucket (b, kb, mb): bytes that pass at once before the rate applies")
      ->capture_default_str();
  cluster_up
      ->add_option("--subnet", cluster_args.subnet,
                   "first three parts of the private /24 (hosts .1.., mpirun's bridge .254)")
      ->capture_default_str();
  auto* cluster_down = cluster->add_subcommand(
      "down",
      "remove every namespace, veth, bridge and qdisc of Cedar's and the state (idempotent)");
  auto* cluster_status = cluster->add_subcommand(
      "status", "print the cluster that is up and each link's shaping (exit 1 when none is up)");

  // mpirun's spelling `-np N` (CLI11 reads a single dash as one-letter options: -n p).
  static char np[] = "--np";
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-np") == 0) argv[i] = np;
  CLI11_PARSE(app, argc, argv);
  cedar::set_command_line(argc, argv);
  try {
    if (*run) return cedar::command_run(run_args);
    if (*suite) return cedar::command_suite(suite_args);
    if (*sbatch) return cedar::command_sbatch(sbatch_args);
    if (*report) return cedar::command_report(report_args);
    if (*project) return cedar::command_project(project_args);
    if (*calibrate) return cedar::command_network_calibrate(calibrate_args);
    if (*network_show) return cedar::command_network_show(show_file);
    if (*list) return cedar::command_list();
    if (*merge) return cedar::command_merge(merge_args);
    if (*data_list) return cedar::command_data_list(data_args);
    if (*data_fetch) return cedar::command_data_fetch(data_args);
    if (*cluster_up) return cedar::command_cluster_up(cluster_args);
    if (*cluster_down) return cedar::command_cluster_down();
    if (*cluster_status) return cedar::command_cluster_status();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cedar: error: %s\n", e.what());
    return cedar::fail_job(2);
  }
  return 0;
}
