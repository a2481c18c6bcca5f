// `cedar report`: tables from the results database, and optionally the whole report as one
// markdown document with its plots beside it.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "comm/network_profile_file.h"
#include "reports/claims.h"
#include "reports/comparison.h"
#include "reports/crossover.h"
#include "reports/document.h"
#include "reports/level_bytes.h"
#include "reports/plots.h"
#include "reports/provenance_table.h"
#include "reports/staleness.h"
#include "reports/uncommitted_runs.h"
#include "results/results_mode.h"
#include "results/store.h"
#include "runner/cli/commands.h"
#include "runner/train/provenance.h"

namespace cedar {
namespace {

std::string crossover_section(const ReportArgs& args, const std::string& plot_dir) {
  std::vector<NetworkProfile> profiles = network_profiles();
  if (!args.networks.empty())
    for (auto& p : load_network_profiles(args.networks)) profiles.push_back(p);
  const NetworkProfile* latency = nullptr;
  for (const auto& p : profiles)
    if (p.name == args.latency_profile) latency = &p;
  if (!latency)
    throw std::runtime_error("--latency-profile: unknown profile '" + args.latency_profile + "'");
  auto points =
      crossover(load_measurements(args.db, args.suite), args.workers, latency->alpha, profiles);
  if (!plot_dir.empty()) write_crossover_plot(points, plot_dir);
  return render_crossover_markdown(points, latency->alpha, profiles);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the findings file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The commands that regenerate the runs and the document, with paths as given.
std::string regenerate_commands(const ReportArgs& args) {
  std::string report = command_line();
  const size_t space = report.find(' ');
  report = "build/cedar" + (space == std::string::npos ? std::string() : report.substr(space));
  std::string s;
  if (!args.claims.empty()) s += "build/cedar suite " + args.claims + " --db " + args.db + "\n";
  return s + report + "\n";
}

void write_document(const ReportArgs& args, const std::string& comparison,
                    const std::string& claims) {
  namespace fs = std::filesystem;
  const fs::path doc(args.document);
  const fs::path dir = doc.parent_path().empty() ? fs::path(".") : doc.parent_path();
  const std::string plots_rel = doc.stem().string() + "-plots";
  const std::string plot_dir = (dir / plots_rel).string();
  DocumentSections d;
  d.title = args.suite.empty() ? "Cedar report" : "Cedar report: " + args.suite;
  d.experiment_file = args.claims;
  d.commands = regenerate_commands(args);
  d.timing = load_suite_timing(args.db, args.suite);
  d.comparison = comparison;
  d.claims = claims;
  d.crossover = crossover_section(args, plot_dir);
  PlotOutput plots = write_plots(args.db, args.suite, plot_dir);
  for (const auto& image : plots.images)
    d.plots.push_back(plots_rel + "/" + fs::path(image).filename().string());
  d.plots.push_back(plots_rel + "/crossover.svg");
  d.provenance = render_provenance_markdown(load_provenance(args.db, args.suite));
  if (!args.findings.empty()) d.findings = read_file(args.findings);
  std::ofstream(args.document) << render_document(d);
  std::fprintf(stderr, "cedar report: %s written, plots in %s\n", args.document.c_str(),
               plot_dir.c_str());
}

}  // namespace

int command_report(const ReportArgs& args) {
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
  std::fputs(out.c_str(), stdout);
  std::string claims;
  if (!args.claims.empty()) {
    auto list = load_claims(args.claims);
    if (list.empty()) throw std::runtime_error(args.claims + ": no claims: section");
    claims = render_claims_markdown(
        evaluate_claims(list, rows, database_window_reader(args.db, args.suite)));
    std::printf("\n%s", claims.c_str());
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
  if (!args.document.empty()) write_document(args, markdown, claims);
  return 0;
}

}  // namespace cedar
