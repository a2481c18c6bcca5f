// `cedar network calibrate`: measures the α–β model's α and β per collective and per rank count
// on the link the ranks run on (comm/network_calibration.h, comm/calibrated_profile.h) and writes
// them as a network profile (comm/network_profile_file.h) for `cedar project` and `cedar report
// --crossover`. Under a user's mpirun (or srun) every rank runs it; with --cluster virtual it
// starts itself on the virtual cluster of `cedar cluster up` and waits.
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>

#include "comm/calibrated_profile.h"
#include "comm/collective_timings_file.h"
#include "comm/network_calibration.h"
#include "comm/network_profile_file.h"
#include "runner/cli/commands.h"
#include "runner/cli/network_profile_fit.h"
#include "runner/suite/launcher.h"

namespace cedar {
namespace {

// A number as the command line takes it back ("%g": 3000, 0.5).
std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string join_numbers(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// "2 ranks on 1 host (node7), 2024-05-01": where the ranks of MPI_COMM_WORLD run.
std::string describe_ranks(int world) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(size_t(world) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, MPI_COMM_WORLD);
  std::set<std::string> hosts;
  for (int r = 0; r < world; ++r)
    hosts.insert(std::string(&all[size_t(r) * MPI_MAX_PROCESSOR_NAME]));
  std::string names;
  for (const auto& h : hosts) names += (names.empty() ? "" : ", ") + h;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return std::to_string(world) + " ranks on " + std::to_string(hosts.size()) +
         (hosts.size() == 1 ? " host (" : " hosts (") + names + "), " + date;
}

// What the command line asks time_collectives for.
CalibrationOptions calibration_options(const NetworkCalibrateArgs& args) {
  CalibrationOptions o;
  o.sizes = args.sizes;
  o.world_sizes = args.world_sizes;
  o.reps = args.reps;
  o.warmup = args.warmup;
  o.idle_seconds = args.idle_ms / 1000;
  o.min_calls = args.min_calls;
  o.ops = args.ops;
  o.every_group = args.every_group;
  return o;
}

// Under mpirun: every rank times, rank 0 fits and writes.
int calibrate_here(const NetworkCalibrateArgs& args) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (world < 2) {
    std::fprintf(stderr,
                 "cedar network calibrate: needs 2 or more ranks: run it under `mpirun -np N` "
                 "(or srun), or with --cluster virtual -np N\n");
    MPI_Finalize();
    return 1;
  }
  const CalibrationOptions o = calibration_options(args);
  std::string where = args.measured_on.empty() ? describe_ranks(world) : args.measured_on;
  // A profile fitted on calls after an idle link is not one of calls back to back: it says so.
  if (args.idle_ms > 0)
    where += "; each timed call alone after " + number_text(args.idle_ms) + " ms idle";
  // Which ranks a P below the world was timed on.
  if (args.every_group)
    where += "; each P below " + std::to_string(world) + " timed in every group of P ranks at once";
  const std::vector<CollectiveTiming> timings = time_collectives(o);
  if (rank == 0 && !args.timings_out.empty())
    write_collective_timings(args.timings_out, {where, timings});
  if (rank == 0) fit_and_write_profile(timings, args.name, where, args.out, "calibrate");
  int status = 0;
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

// --cluster virtual: this executable's calibrate under the cluster's mpirun.
int calibrate_on_cluster(const NetworkCalibrateArgs& args) {
  const auto probe = cluster_for_run("virtual", 2, 0, "network calibrate");
  const int np = args.np > 0 ? args.np : probe->spec.hosts * probe->spec.ranks_per_host;
  const auto cluster = cluster_for_run("virtual", np, 0, "network calibrate");
  setenv("CEDAR_CLUSTER_LINKS", cluster->links_json().c_str(), 1);
  std::vector<std::string> argv = cluster_launch_command(*cluster, np, {}, self_executable());
  argv.pop_back();  // "run"
  const std::string out = std::filesystem::absolute(args.out).string();
  // `cedar network validate` (reports/link_validation.h) matches runs to profiles by these words.
  const std::string where = args.measured_on.empty() ? "virtual cluster: " + cluster->describe() +
                                                           ", " + std::to_string(np) + " ranks"
                                                     : args.measured_on;
  for (const std::string& a :
       {std::string("network"), std::string("calibrate"), std::string("--out"), out,
        std::string("--name"), args.name, std::string("--measured-on"), where,
        std::string("--sizes"), join_numbers(args.sizes), std::string("--reps"),
        std::to_string(args.reps), std::string("--warmup"), std::to_string(args.warmup),
        std::string("--idle-ms"), number_text(args.idle_ms), std::string("--min-calls"),
        std::to_string(args.min_calls)})
    argv.push_back(a);
  if (!args.timings_out.empty()) {
    argv.push_back("--timings");
    argv.push_back(std::filesystem::absolute(args.timings_out).string());
  }
  if (!args.ops.empty()) {
    std::string ops;
    for (const std::string& op : args.ops) ops += (ops.empty() ? "" : ",") + op;
    argv.push_back("--ops");
    argv.push_back(ops);
  }
  if (args.every_group) argv.push_back("--every-group");
  if (!args.world_sizes.empty()) {
    std::vector<int64_t> ps(args.world_sizes.begin(), args.world_sizes.end());
    argv.push_back("--world-sizes");
    argv.push_back(join_numbers(ps));
  }
  std::string shown;
  for (const auto& a : argv) shown += (shown.empty() ? "" : " ") + shell_word(a);
  std::fprintf(stderr, "cedar network calibrate: %s\n", shown.c_str());
  return run_process(argv);
}

}  // namespace

int command_network_show(const std::string& path) {
  for (const NetworkProfile& p : load_network_profiles(path)) {
    std::printf("## %s: %s\n\n", p.name.c_str(), p.provenance().c_str());
    print_fits(p);
    std::printf("\n");
  }
  return 0;
}

int command_network_calibrate(const NetworkCalibrateArgs& args) {
  if (args.name.empty()) throw std::invalid_argument("--name: give the profile a name");
  // Refused here, before any rank starts, with the words the ranks would use.
  check_calibration_options(calibration_options(args));
  if (args.cluster == "virtual") return calibrate_on_cluster(args);
  if (!args.cluster.empty() && args.cluster != "none")
    throw std::invalid_argument("--cluster: 'virtual' or 'none', not '" + args.cluster + "'");
  if (args.np > 0) throw std::invalid_argument("-np goes with --cluster virtual");
  return calibrate_here(args);
}

void add_network_commands(CLI::App& app, Subcommands& out) {
  auto calibrate_args = std::make_shared<NetworkCalibrateArgs>();
  auto* network = app.add_subcommand("network", "network profiles: calibrate, show, fit, validate");
  network->require_subcommand(1);
  auto* calibrate = network->add_subcommand(
      "calibrate",
      "time allreduce, allgather, allgatherv, broadcast and sendrecv over a sweep of sizes on the "
      "ranks it runs on (under mpirun -np N, or --cluster virtual), fit alpha and beta per "
      "collective and rank count, and write them as a network profile");
  calibrate->add_option("--out", calibrate_args->out, "profile file to write (YAML)")->required();
  calibrate->add_option("--name", calibrate_args->name, "the profile's name")->required();
  calibrate
      ->add_option("--sizes", calibrate_args->sizes,
                   "bytes per call (allgather[v]: per rank), multiples of 4, e.g. 4KiB,1MiB")
      ->delimiter(',')
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  calibrate
      ->add_option("--world-sizes", calibrate_args->world_sizes,
                   "rank counts P to fit at, each timed on the first P ranks (default: 2, 4, 8, "
                   "... and all; see --every-group)")
      ->delimiter(',')
      ->check(CLI::Range(2, 1 << 24));
  calibrate->add_option("--reps", calibrate_args->reps, "timed loops per size (median kept)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  calibrate->add_option("--warmup", calibrate_args->warmup, "untimed calls per size")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  calibrate
      ->add_option("--idle-ms", calibrate_args->idle_ms,
                   "time each call alone, after this many milliseconds in which no rank uses the "
                   "link (as a training step's compute leaves it); 0: calls back to back")
      ->check(CLI::Range(0.0, 600000.0))
      ->capture_default_str();
  calibrate
      ->add_option("--min-calls", calibrate_args->min_calls,
                   "at least this many calls back to back in each timed loop (large messages "
                   "on a slow link otherwise make one), as a training step's exchanges follow "
                   "each other")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  calibrate->add_flag("--every-group", calibrate_args->every_group,
                      "time each P below the ranks running on every group of P consecutive ranks "
                      "at once (each host's ranks, where the hostfile fills a host first), not on "
                      "the first P with the others waiting: the regime of a hierarchical "
                      "exchange's level inside a host");
  calibrate
      ->add_option("--ops", calibrate_args->ops,
                   "the collectives to time, among allreduce, allgather, allgatherv, broadcast, "
                   "sendrecv (allreduce required; default: all)")
      ->delimiter(',')
      ->check(CLI::IsMember(calibration_ops()));
  calibrate->add_option("--timings", calibrate_args->timings_out,
                        "also write the measured medians to this file, for `cedar network fit`");
  calibrate->add_option("--measured-on", calibrate_args->measured_on,
                        "where it is measured, free text (default: the ranks' hosts and the "
                        "date; on the virtual cluster its links)");
  calibrate
      ->add_option("--cluster", calibrate_args->cluster,
                   "virtual: start on the cluster of `cedar cluster up` instead of running "
                   "under the caller's mpirun")
      ->check(CLI::IsMember({"none", "virtual"}));
  calibrate
      ->add_option("-n,--np", calibrate_args->np, "--cluster virtual: ranks (default: all slots)")
      ->check(CLI::Range(2, 1 << 16));

  auto show_file = std::make_shared<std::string>();
  auto* network_show = network->add_subcommand(
      "show", "print the profiles of a networks file as cedar reads them (fits per collective)");
  network_show->add_option("file", *show_file, "YAML file of network profiles")
      ->required()
      ->check(CLI::ExistingFile);
  out.push_back(
      {calibrate, [calibrate_args] { return command_network_calibrate(*calibrate_args); }});
  out.push_back({network_show, [show_file] { return command_network_show(*show_file); }});
  add_network_fit_command(*network, out);
  add_network_validate_command(*network, out);
}

}  // namespace cedar
