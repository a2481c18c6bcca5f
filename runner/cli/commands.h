#pragma once
// The subcommands behind `cedar`. No LibTorch here.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "runner/suite/sbatch.h"

namespace CLI {
class App;
}

namespace cedar {

// A subcommand of `cedar`: where CLI11 parsed it, and what runs it (returning the exit status).
struct Subcommand {
  CLI::App* parsed = nullptr;
  std::function<int()> run;
};
using Subcommands = std::vector<Subcommand>;

// Each file of runner/cli/ declares its own subcommands' options and adds what runs them; main()
// only calls these and runs the one that was parsed.
void add_run_command(CLI::App& app, Subcommands& out);
void add_suite_command(CLI::App& app, Subcommands& out);
void add_sbatch_command(CLI::App& app, Subcommands& out);
void add_report_command(CLI::App& app, Subcommands& out);
void add_merge_command(CLI::App& app, Subcommands& out);
void add_export_command(CLI::App& app, Subcommands& out);
void add_project_command(CLI::App& app, Subcommands& out);
void add_network_commands(CLI::App& app, Subcommands& out);  // calibrate, show, fit, validate
// `cedar network validate`, under the `network` subcommand `network`.
void add_network_validate_command(CLI::App& network, Subcommands& out);
// `cedar network fit`, likewise.
void add_network_fit_command(CLI::App& network, Subcommands& out);
void add_list_command(CLI::App& app, Subcommands& out);
void add_data_commands(CLI::App& app, Subcommands& out);     // list, fetch
void add_cluster_commands(CLI::App& app, Subcommands& out);  // up, down, status
void add_trace_commands(CLI::App& app, Subcommands& out);    // summary

struct RunArgs {
  std::string experiment;
  std::vector<std::string> overrides;
  std::string db = "results/cedar.db";
  bool quiet = false;
  bool resume = false;
  std::string results_mode;  // auto, wal or shards; empty: the experiment's results.mode
};

struct SuiteArgs {
  std::string experiment;
  std::vector<std::string> overrides;
  std::string db = "results/cedar.db";
  bool dry_run = false;
  bool quiet = false;
  int only = -1;  // run only the run with this index (a Slurm array task's); -1: every run
  std::string results_mode;     // auto, wal or shards; empty: the experiment's results.mode
  bool skip_preflight = false;  // launch without checking data, models, sizes and folders
};

struct SbatchArgs {
  std::string experiment;
  std::vector<std::string> overrides;
  std::string db = "results/cedar.db";
  SbatchOptions job;
  bool dry_run = false;         // print the job script only
  bool wait = false;            // wait for the job to end, then print the comparison table
  std::string results_mode;     // given to every `cedar suite` of the job (empty: the file's)
  bool skip_preflight = false;  // submit (and run) without checking data, models, sizes, folders
};

struct ReportArgs {
  std::string db;
  std::string suite;
  std::string format = "md";
  std::string plots;        // folder for plots (empty: none)
  std::string claims;       // experiment file whose claims: are evaluated (empty: none)
  double target = 0;        // test accuracy for the time-to-target column (0: none)
  bool provenance = false;  // also each run's command line, libraries, CPU / GPU
  bool crossover = false;   // also when each run beats dense SGD over a bandwidth sweep
  bool levels = false;      // also the bytes per level of hierarchical exchanges
  bool staleness = false;   // also the staleness of parameter-server runs' updates
  bool overlap = false;     // also the share of the exchange train.overlap hid behind backward
  std::string networks;     // YAML file of extra network profiles (empty: the built-in ones)
  std::vector<int> workers = {16, 64};    // crossover: worker counts besides the measured one
  std::string latency_profile = "10gbe";  // crossover: the profile whose α the sweep holds
  std::string document;  // also write the whole report as markdown here, plots beside it
  std::string findings;  // hand-written markdown included in the document
  std::string results_mode = "auto";  // how the database is written (merging shards first)
  std::string regenerate;             // a document to write again from the results dump beside it
  std::string output_dir;  // --regenerate: write it here (plots as data and scripts only)
};

struct MergeArgs {
  std::string db;
  std::string results_mode = "auto";  // the main database's journal: WAL or rollback
  double wait_seconds = 600;          // for another merge to finish
  double stale_seconds = 120;         // a shard writer's heartbeat this old means it is gone
};

struct ProjectArgs {
  std::string db;
  std::string suite;
  int64_t run_id = 0;                       // one run only (0: every completed run)
  std::vector<int> workers = {8, 64, 256};  // worker counts to project to
  std::string network = "10gbe";            // network profile of the communication time
  std::string intra_network;  // profile of level "intra" (empty: the one each run recorded)
  std::string networks;       // YAML file of extra (e.g. calibrated) profiles (empty: none)
  std::string format = "md";  // md or csv
};

struct DataArgs {
  std::string name;           // data set to fetch
  std::string root = "data";  // the data root: each data set goes into its folder under it
  std::string from;           // archive, folder or URL already holding the files
  std::string mirror;         // base URL replacing the catalog's (<mirror>/<name>/<file>)
};

struct ClusterArgs {
  int hosts = 2;
  int ranks_per_host = 1;
  std::string bandwidth = "1gbit";
  std::string burst = "256kb";
  std::string subnet = "10.213.0";
};

struct NetworkCalibrateArgs {
  std::string out;          // the profile file written
  std::string name;         // the profile's name
  std::string measured_on;  // free text (empty: the ranks' hosts and the date)
  std::vector<int64_t> sizes = {4096, 16384, 65536, 262144, 1048576, 4194304};  // bytes
  std::vector<int> world_sizes;  // P values (empty: 2, 4, 8, ... and all the ranks)
  int reps = 5;                  // timed loops per size (the median is kept)
  int warmup = 3;                // untimed calls per size
  double idle_ms = 0;            // > 0: each timed call alone after this long with the link quiet
  int min_calls = 1;             // calls back to back per timed loop, at least
  bool every_group = false;      // P below the world: every group of P ranks timed at once
  std::string timings_out;       // also write the measured medians here (`cedar network fit`)
  std::vector<std::string> ops;  // the collectives timed (empty: all five)
  std::string cluster;           // "virtual": start on the virtual cluster (empty: under mpirun)
  int np = 0;                    // --cluster virtual: ranks (0: every slot)
};

int command_run(const RunArgs& args);
int command_network_calibrate(const NetworkCalibrateArgs& args);
// `cedar network show FILE`: each profile of a networks file as the loader reads it.
int command_network_show(const std::string& path);
int command_suite(const SuiteArgs& args);
int command_sbatch(const SbatchArgs& args);
int command_report(const ReportArgs& args);
int command_project(const ProjectArgs& args);
// `markdown`: the same as a markdown page (docs/reference.md).
int command_list(bool markdown);
int command_merge(const MergeArgs& args);
int command_data_list(const DataArgs& args);
int command_data_fetch(const DataArgs& args);
int command_cluster_up(const ClusterArgs& args);
int command_cluster_down();
int command_cluster_status();
// When `db` has shards: merges the closed ones (waiting for another merge to finish) and prints
// what it did to `out`.
void merge_if_sharded(const std::string& db, const std::string& results_mode, std::FILE* out);
std::string version_string();
// Ends the process with `code`; under MPI with several ranks it aborts the whole job so that no
// peer waits forever in a collective.
int fail_job(int code);

}  // namespace cedar
