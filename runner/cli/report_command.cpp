// `cedar report`: tables from the results database, and optionally the whole report as one
// markdown document with its plots and results dump beside it (runner/cli/report_document.h).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "reports/claims.h"
#include "reports/comparison.h"
#include "reports/document_arguments.h"
#include "reports/hidden_exchange.h"
#include "reports/level_bytes.h"
#include "reports/plots.h"
#include "reports/provenance_table.h"
#include "reports/staleness.h"
#include "reports/uncommitted_runs.h"
#include "results/results_mode.h"
#include "results/store.h"
#include "runner/cli/commands.h"
#include "runner/cli/report_document.h"

namespace cedar {
namespace {

int report_main(const ReportArgs& args, const DocumentOutput& document) {
  const ResolvedResultsMode mode = resolve_results_mode(args.results_mode, args.db);
  merge_if_sharded(args.db, args.results_mode, stderr);  // runs in shards join the database first
  if (::access(args.db.c_str(), F_OK) != 0)
    throw std::runtime_error(args.db + ": no such results database");
  // Runs whose process died without a word (kill -9, a lost node) show as failed, not running.
  // (In shard mode the merge has done this: no run in the database is left running.)
  if (mode.mode == ResultsMode::kWal)
    if (int stale = ResultStore(args.db).mark_stale_runs())
      std::fprintf(stderr,
                   "%s: %d run(s) left 'running' by a process that is gone: marked failed\n",
                   args.db.c_str(), stale);
  auto rows = compare_runs(load_runs(args.db, args.suite, args.target), args.target);
  if (rows.empty())
    throw std::runtime_error(
        args.db + ": no finished runs" +
        (args.suite.empty() ? std::string() : " in suite '" + args.suite + "'"));
  // Rows holding a run built from uncommitted changes are marked, the runs named under the table.
  const auto uncommitted = load_uncommitted_runs(args.db, args.suite);
  const std::string markdown = render_markdown_marked(rows, uncommitted);
  std::string out;
  if (args.format == "md")
    out = markdown;
  else if (args.format == "csv")
    out = render_csv(rows);
  else
    out = render_latex_marked(rows, uncommitted);
  if (args.format == "csv" && !uncommitted.empty())
    std::fprintf(stderr,
                 "cedar report: %zu run(s) built from uncommitted changes (see --format md)\n",
                 uncommitted.size());
  if (document.print) std::fputs(out.c_str(), stdout);
  std::string claims;
  if (!args.claims.empty()) {
    auto list = load_claims(args.claims);
    if (list.empty()) throw std::runtime_error(args.claims + ": no claims: section");
    claims = render_claims_markdown(
        evaluate_claims(list, rows, database_window_reader(args.db, args.suite)));
    if (document.print) std::printf("\n%s", claims.c_str());
  }
  if (args.crossover)
    std::printf("\n### When does compression help?\n\n%s",
                crossover_section(args, args.plots).c_str());
  if (args.levels)
    std::printf("\n### Bytes per level\n\n%s",
                render_level_bytes_markdown(load_level_bytes(args.db, args.suite)).c_str());
  if (args.staleness)
    std::printf("\n### Staleness\n\n%s",
                render_staleness_markdown(load_staleness(args.db, args.suite)).c_str());
  if (args.overlap) {
    const std::string hidden =
        render_hidden_exchange_markdown(load_hidden_exchange(args.db, args.suite));
    std::printf("\n### Communication hidden behind backward\n\n%s",
                hidden.empty() ? "No run recorded it (only runs with train.overlap do).\n"
                               : hidden.c_str());
  }
  if (args.provenance)
    std::printf("\n### Provenance\n\n%s",
                render_provenance_markdown(load_provenance(args.db, args.suite)).c_str());
  if (!args.plots.empty()) {
    PlotOutput plots = write_plots(args.db, args.suite, args.plots);
    std::fprintf(stderr, "cedar report: %zu plots in %s\n", plots.scripts.size(),
                 args.plots.c_str());
  }
  if (!args.document.empty()) write_document(args, document, rows, markdown, claims);
  return 0;
}

}  // namespace

int command_report(const ReportArgs& args) {
  if (!args.regenerate.empty()) return regenerate_document(args, report_main);
  if (args.db.empty())
    throw std::runtime_error("cedar report: give a results database (or --regenerate DOCUMENT)");
  if (!args.output_dir.empty())
    throw std::runtime_error("cedar report: --output-dir goes with --regenerate");
  // The document records and shows paths inside the repository, where cedar report runs.
  ReportArgs a = args;
  for (std::string* path : {&a.claims, &a.findings, &a.networks, &a.document})
    *path = path_from_here(*path);
  return report_main(a, document_output(a));
}

void add_report_command(CLI::App& app, Subcommands& out) {
  auto report_args = std::make_shared<ReportArgs>();
  auto* report = app.add_subcommand("report", "comparison table of the runs in a results database");
  report->add_option("db", report_args->db, "results database (not with --regenerate)");
  report->add_option("--suite", report_args->suite, "only this suite");
  report->add_option("--format", report_args->format, "md, csv or tex")
      ->check(CLI::IsMember({"md", "csv", "tex"}))
      ->capture_default_str();
  report
      ->add_option("--target", report_args->target,
                   "test accuracy (0-1) for the time-to-target column and its speed-up vs dense")
      ->check(CLI::Range(0.0, 1.0));
  report->add_option("--claims", report_args->claims,
                     "evaluate the claims: section of this experiment file on the runs");
  report->add_option(
      "--plots", report_args->plots,
      "also write accuracy/loss plots (gnuplot SVG + PNG, with their .gp and data) here");
  report->add_flag(
      "--crossover", report_args->crossover,
      "also when each run beats dense SGD: time per epoch over a bandwidth sweep and the "
      "crossover bandwidth (α–β model from its measured compute and collectives)");
  report->add_option("--networks", report_args->networks,
                     "YAML file of network profiles ({name, alpha, beta | bandwidth_gbps}) besides "
                     "the built-in ones");
  report
      ->add_option("--workers", report_args->workers,
                   "crossover: worker counts besides the measured one")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  report
      ->add_option("--latency-profile", report_args->latency_profile,
                   "crossover: profile whose latency α the bandwidth sweep keeps")
      ->capture_default_str();
  report->add_option(
      "--document", report_args->document,
      "also write the whole report (setting, commands, wall-clock, tables, claims and their "
      "history, crossover, plots, provenance) as one markdown file; plots go to <name>-plots/ "
      "and the suite's runs as SQL to <name>.sql.gz beside it");
  report
      ->add_option(
          "--findings", report_args->findings,
          "--document: hand-written markdown (e.g. why a claim did not reproduce) to include")
      ->check(CLI::ExistingFile);
  report
      ->add_option("--regenerate", report_args->regenerate,
                   "write a --document again from the results dump beside it (DOC.sql.gz), "
                   "with the arguments it records")
      ->check(CLI::ExistingFile);
  report->add_option("--output-dir", report_args->output_dir,
                     "--regenerate: write the document and its plots' data and scripts here (no "
                     "gnuplot), e.g. to compare them with the committed ones");
  report->add_flag("--levels", report_args->levels,
                   "also the bytes per level (intra, inter) of runs with hierarchical exchanges, "
                   "per step and per run");
  report->add_flag("--staleness", report_args->staleness,
                   "also the staleness distribution of parameter-server runs' applied updates");
  report->add_flag("--overlap", report_args->overlap,
                   "also the share of each run's exchange that train.overlap hid behind backward");
  report->add_flag("--provenance", report_args->provenance,
                   "also print each run's command line, library versions, CPU / GPU and threads");
  report
      ->add_option("--results-mode", report_args->results_mode,
                   "auto, wal or shards: how the database is written; closed shards are merged "
                   "first either way")
      ->check(CLI::IsMember({"auto", "wal", "shards"}))
      ->capture_default_str();
  out.push_back({report, [report_args] { return command_report(*report_args); }});
}

}  // namespace cedar
