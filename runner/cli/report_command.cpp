// `cedar report`: tables from the results database, and optionally the whole report as one
// markdown document with its plots and results dump beside it (runner/cli/report_document.h).
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "reports/claims.h"
#include "reports/comparison.h"
#include "reports/document_arguments.h"
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

}  // namespace cedar
