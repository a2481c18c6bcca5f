// `cedar suite`: expands a suite's grid, runs what is not yet completed (skipping runs whose
// resolved configuration and world size already completed in the database), then prints the
// comparison table.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

#include "algorithms/algorithm.h"
#include "config/experiment_config.h"
#include "reports/claims.h"
#include "reports/comparison.h"
#include "reports/provenance_table.h"
#include "reports/uncommitted_runs.h"
#include "results/claim_files.h"
#include "results/results_mode.h"
#include "results/shards.h"
#include "results/store.h"
#include "runner/cli/commands.h"
#include "runner/suite/launcher.h"
#include "runner/suite/preflight.h"
#include "runner/suite/suite.h"
#include "runner/train/run_guard.h"

namespace cedar {
namespace {

// Where the suite's runs are recorded and claimed: the database itself (WAL mode), or shards and
// claim files beside it (shard mode).
class SuiteResults {
 public:
  SuiteResults(const std::string& db, const ResolvedResultsMode& mode) : db_(db), mode_(mode) {
    if (mode.mode == ResultsMode::kShards) {
      claim_files_ = std::make_unique<ClaimFiles>(db);
    } else if (int stale = ResultStore(db).mark_stale_runs()) {
      std::printf("%d run(s) left 'running' by a process that is gone: marked failed\n", stale);
    }
  }
  bool completed(const std::string& fingerprint) {
    if (claim_files_) return completed_in_results(db_, fingerprint);
    return ResultStore(db_).has_completed(fingerprint);
  }
  bool try_claim(const std::string& fingerprint) {
    if (claim_files_) return claim_files_->try_claim(fingerprint);
    return ResultStore(db_).try_claim(fingerprint);
  }
  void release(const std::string& fingerprint) {
    if (claim_files_) return claim_files_->release(fingerprint);
    ResultStore(db_).release_claim(fingerprint);
  }
  // Shard mode: the closed shards into the database (waiting for another merge to finish).
  void merge() {
    if (claim_files_) merge_if_sharded(db_, mode_.name(), stdout);
  }

 private:
  std::string db_;
  ResolvedResultsMode mode_;
  std::unique_ptr<ClaimFiles> claim_files_;
};

// What the results hold of a run: changes when a launch got as far as starting (or resuming) it.
std::string records_of(const std::string& db, const std::string& fingerprint) {
  std::string s;
  for (const RecordedRun& r : recorded_runs(db, fingerprint))
    s += r.uuid + ":" + std::to_string(r.attempt) + ":" + r.status + ":" +
         std::to_string(r.heartbeat) + ";";
  return s;
}

// Launches one run on the virtual cluster. Open MPI's daemon on a namespace host now and then
// crashes while starting (a segfault in hwloc's topology sharing, before any rank runs): a launch
// that failed without writing anything of the run is said to be that and launched again, at most
// twice; a run that began and failed is a failure of the run.
int launch_on_cluster(const std::vector<std::string>& argv, const std::string& db,
                      const std::string& fingerprint) {
  const int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    const std::string before = records_of(db, fingerprint);
    const int rc = run_process(argv);
    if (rc == 0 || stop_signal() || attempt == kAttempts || records_of(db, fingerprint) != before)
      return rc;
    std::fprintf(stderr,
                 "cedar suite: the job exited with status %d before its run began (an MPI daemon "
                 "on a virtual host failed to start); launching again (attempt %d of %d)\n",
                 rc, attempt + 1, kAttempts);
  }
}

}  // namespace

int command_suite(const SuiteArgs& args) {
  const Suite suite = expand_suite(args.experiment, {gradient_algorithm_names()}, args.overrides,
                                   /*keep_invalid_runs=*/true);
  // --only picks one run by its index in the (deterministic) grid order, e.g. a Slurm array task's.
  std::vector<size_t> selected;
  for (size_t i = 0; i < suite.runs.size(); ++i)
    if (args.only < 0 || static_cast<size_t>(args.only) == i) selected.push_back(i);
  if (selected.empty())
    throw ConfigError(suite.file + ": --only " + std::to_string(args.only) + ": the suite '" +
                      suite.name + "' has " + std::to_string(suite.runs.size()) +
                      " run(s), indices 0 to " + std::to_string(suite.runs.size() - 1));
  // Every run's configuration, and (unless skipped) what the selected runs would load and write,
  // before anything starts or is written (runner/suite/preflight.h).
  const PreflightReport check = preflight(suite, {args.db, selected, !args.skip_preflight});
  if (!check.configurations_ok() || (!check.ok() && !args.dry_run)) throw PreflightError(check);
  const std::vector<std::string>& prints = check.fingerprints;
  // Runs on the virtual cluster (network.cluster: virtual): checked against it before any starts.
  std::vector<std::optional<ClusterState>> clusters(suite.runs.size());
  for (size_t i : selected) {
    const ExperimentConfig cfg = load_experiment(suite.file, suite.runs[i].overrides);
    clusters[i] = cluster_for_run(cfg.network.cluster, suite.runs[i].world_size,
                                  cfg.network.ranks_per_node, suite.runs[i].name);
  }

  if (args.dry_run) {
    std::printf("suite '%s': %zu run(s)\n", suite.name.c_str(), suite.runs.size());
    for (size_t i : selected) {
      const SuiteRun& r = suite.runs[i];
      std::string cmd;
      if (clusters[i]) cmd += "CEDAR_CLUSTER_LINKS=" + shell_word(clusters[i]->links_json()) + " ";
      for (const auto& a : launch_command(r.world_size, {}, clusters[i]))
        cmd += shell_word(a) + " ";
      cmd += suite.file + " --db " + args.db;
      for (const auto& o : r.overrides) cmd += " --set " + shell_word(o);
      std::printf("  %2zu %-28s ranks %d seed %llu\n    %s\n", i, r.name.c_str(), r.world_size,
                  static_cast<unsigned long long>(r.seed), cmd.c_str());
    }
    // A dry run lists the runs whatever the data: what a launch would stop on is a note.
    if (!check.ok())
      std::printf("\npreflight: %s; a launch would stop here:\n%s  (%s)\n", check.summary().c_str(),
                  check.render().c_str(), check.checked().c_str());
    else if (!args.skip_preflight)
      std::printf("\npreflight: %s, no problem\n", check.checked().c_str());
    return 0;
  }

  const ResolvedResultsMode mode = resolve_results_mode(
      args.results_mode.empty() ? load_experiment(suite.file, args.overrides).results.mode
                                : args.results_mode,
      args.db);
  if (!args.skip_preflight) std::printf("preflight: %s\n", check.checked().c_str());
  std::printf("results: %s, %s\n", args.db.c_str(), mode.explain().c_str());
  SuiteResults results(args.db, mode);
  int failed = 0;
  double spent = 0;
  int launched = 0;
  // Several suite processes may share the database (e.g. Slurm array tasks): each run is claimed
  // before it starts; runs another live process holds are revisited once the rest are done.
  std::vector<size_t> pending = selected;
  while (!pending.empty() && !stop_signal()) {
    std::vector<size_t> deferred;
    for (size_t i : pending) {
      if (stop_signal()) break;
      const SuiteRun& r = suite.runs[i];
      if (results.completed(prints[i])) {
        std::printf("[%zu/%zu] %s (seed %llu): completed earlier, skipped\n", i + 1,
                    suite.runs.size(), r.name.c_str(), static_cast<unsigned long long>(r.seed));
        continue;
      }
      if (!results.try_claim(prints[i])) {
        std::printf("[%zu/%zu] %s (seed %llu): held by another process, revisited later\n", i + 1,
                    suite.runs.size(), r.name.c_str(), static_cast<unsigned long long>(r.seed));
        std::fflush(stdout);
        deferred.push_back(i);
        continue;
      }
      // Claimed: a run that completed between the check and the claim is not run twice.
      if (results.completed(prints[i])) {
        results.release(prints[i]);
        std::printf("[%zu/%zu] %s (seed %llu): completed earlier, skipped\n", i + 1,
                    suite.runs.size(), r.name.c_str(), static_cast<unsigned long long>(r.seed));
        continue;
      }
      std::string eta = "";
      if (launched > 0) {
        double per_run = spent / launched;
        eta = " | ETA " +
              std::to_string(static_cast<int>(per_run * double(suite.runs.size() - i))) + " s";
      }
      std::printf(
          "[%zu/%zu] %s on %d rank(s)%s, seed %llu%s\n", i + 1, suite.runs.size(), r.name.c_str(),
          r.world_size,
          clusters[i] ? (" of the virtual cluster (" + clusters[i]->describe() + ")").c_str() : "",
          static_cast<unsigned long long>(r.seed), eta.c_str());
      std::fflush(stdout);
      std::vector<std::string> run_args = {suite.file, "--db", args.db};
      for (const auto& o : r.overrides) {
        run_args.push_back("--set");
        run_args.push_back(o);
      }
      if (args.quiet) run_args.push_back("--quiet");
      run_args.push_back("--results-mode");
      run_args.push_back(mode.name());
      run_args.push_back("--resume");  // a failed earlier attempt continues from its checkpoint
      auto t0 = std::chrono::steady_clock::now();
      // The ranks read the links they run on for their provenance (runner/train/provenance.h).
      if (clusters[i])
        setenv("CEDAR_CLUSTER_LINKS", clusters[i]->links_json().c_str(), 1);
      else
        unsetenv("CEDAR_CLUSTER_LINKS");
      const auto argv = launch_command(r.world_size, run_args, clusters[i]);
      int rc = clusters[i] ? launch_on_cluster(argv, args.db, prints[i]) : run_process(argv);
      spent += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++launched;
      results.release(prints[i]);
      if (rc != 0) {
        ++failed;
        std::fprintf(stderr, "cedar suite: run '%s' exited with status %d\n", r.name.c_str(), rc);
      }
    }
    if (!deferred.empty() && deferred.size() == pending.size())
      std::this_thread::sleep_for(std::chrono::seconds(2));  // everything left is held elsewhere
    pending = deferred;
  }

  results.merge();
  if (args.only >= 0) {  // one run of several processes: the table comes from `cedar report`
    if (stop_signal()) return 128 + stop_signal();
    return failed ? 3 : 0;
  }
  // The file's train.target_accuracy (if set) gives the time-to-target column.
  const double target = load_experiment(suite.file, args.overrides).train.target_accuracy;
  auto rows = compare_runs(load_runs(args.db, suite.name, target), target);
  std::printf("\n## %s\n\n%s", suite.name.c_str(),
              render_markdown_marked(rows, load_uncommitted_runs(args.db, suite.name)).c_str());
  std::printf("%s", render_links_note(load_provenance(args.db, suite.name)).c_str());
  auto claims = load_claims(suite.file);
  if (!claims.empty())
    std::printf("\n### Claims\n\n%s",
                render_claims_markdown(
                    evaluate_claims(claims, rows, database_window_reader(args.db, suite.name)))
                    .c_str());
  std::fflush(stdout);
  if (stop_signal()) return 128 + stop_signal();
  return failed ? 3 : 0;
}

void add_suite_command(CLI::App& app, Subcommands& out) {
  auto suite_args = std::make_shared<SuiteArgs>();
  auto* suite = app.add_subcommand(
      "suite", "run every combination of an experiment's grid, then print the comparison");
  suite
      ->add_option("experiment", suite_args->experiment,
                   "experiment YAML file with a grid: section")
      ->required();
  suite->add_option("--set", suite_args->overrides, "override a key in every run (repeatable)");
  suite->add_option("--db", suite_args->db, "results database")->capture_default_str();
  suite->add_flag("--dry-run", suite_args->dry_run,
                  "list the runs and their launch commands, then what the preflight would stop a "
                  "launch on; launch nothing");
  suite->add_flag("--quiet", suite_args->quiet, "no per-epoch progress lines from the runs");
  suite
      ->add_option("--only", suite_args->only,
                   "only the run with this index (0-based, in --dry-run's order; one Slurm array "
                   "task's run)")
      ->check(CLI::NonNegativeNumber);
  suite
      ->add_option("--results-mode", suite_args->results_mode,
                   "auto, wal or shards: how the runs write the database (default: the "
                   "experiment's results.mode, auto); shards are merged at the end")
      ->check(CLI::IsMember({"auto", "wal", "shards"}));
  suite->add_flag("--skip-preflight", suite_args->skip_preflight,
                  "launch without first checking every run's data files, model, batch against "
                  "the data, and output folders (configurations are always checked)");
  out.push_back({suite, [suite_args] { return command_suite(*suite_args); }});
}

}  // namespace cedar
