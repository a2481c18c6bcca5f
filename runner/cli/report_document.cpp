// `cedar report --document` and `--regenerate` (runner/cli/report_document.h).
#include "runner/cli/report_document.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "comm/network_profile_file.h"
#include "reports/claim_history.h"
#include "reports/claims.h"
#include "reports/crossover.h"
#include "reports/document.h"
#include "reports/document_arguments.h"
#include "reports/hidden_exchange.h"
#include "reports/plots.h"
#include "reports/portable_command.h"
#include "reports/provenance_table.h"
#include "results/gzip_file.h"
#include "results/sql_dump.h"
#include "runner/cli/temporary_folder.h"
#include "runner/cli/text_file.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

// A dump above this size is too large to keep in the repository beside its document.
constexpr uintmax_t kDumpWarnBytes = 5u << 20;

// The claims' history, and the line the verdicts get when claims changed after the runs.
void claim_history(const ReportArgs& args, const std::vector<ComparisonRow>& rows,
                   const std::vector<RunProvenance>& runs, DocumentSections& d) {
  const ClaimHistory h = load_claim_history(args.claims, runs);
  const WindowReader windows = database_window_reader(args.db, args.suite);
  d.claim_history = render_claim_history_markdown(
      h, [&](const Claim& c) { return evaluate_claims({c}, rows, windows).front(); });
  d.claims_notice = claim_history_notice(h);
  for (const auto& e : h.events)
    if (e.commit.empty()) {
      std::fprintf(stderr,
                   "cedar report: %s has claim changes not committed: the document names no "
                   "commit for them; commit them and write it again\n",
                   args.claims.c_str());
      break;
    }
}

}  // namespace

std::string crossover_section(const ReportArgs& args, const std::string& plot_dir, bool render) {
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
  if (!plot_dir.empty()) write_crossover_plot(points, plot_dir, render);
  return render_crossover_markdown(points, latency->alpha, profiles);
}

DocumentOutput document_output(const ReportArgs& args) {
  DocumentOutput out;
  out.path = args.document;
  out.shown_db = repository_db_path(args.db, args.document);
  return out;
}

void write_document(const ReportArgs& args, const DocumentOutput& out,
                    const std::vector<ComparisonRow>& rows, const std::string& comparison,
                    const std::string& claims) {
  const fs::path doc(out.path);
  const fs::path dir = doc.parent_path().empty() ? fs::path(".") : doc.parent_path();
  const std::string plots_rel = doc.stem().string() + "-plots";
  const std::string plot_dir = (dir / plots_rel).string();
  DocumentArguments recorded;
  recorded.db = out.shown_db;
  recorded.suite = args.suite;
  recorded.claims = args.claims;
  recorded.findings = args.findings;
  recorded.networks = args.networks;
  recorded.document = args.document;
  recorded.latency_profile = args.latency_profile;
  recorded.target = args.target;
  recorded.workers = args.workers;
  DocumentSections d;
  d.title = args.suite.empty() ? "Cedar report" : "Cedar report: " + args.suite;
  d.arguments = document_arguments_comment(recorded);
  d.experiment_file = args.claims;
  d.commands = document_commands(recorded);
  d.timing = load_suite_timing(args.db, args.suite);
  d.comparison = comparison;
  d.claims = claims;
  d.crossover = crossover_section(args, plot_dir, out.render);
  // The images each script draws, whether or not gnuplot ran here: the document is the same.
  for (const auto& script : write_plots(args.db, args.suite, plot_dir, out.render).scripts)
    d.plots.push_back(plots_rel + "/" + fs::path(script).stem().string() + ".svg");
  d.plots.push_back(plots_rel + "/crossover.svg");
  // Runs with train.overlap: how much of their exchange backward hid, as a table and a figure.
  const std::vector<HiddenExchangeRow> hidden = load_hidden_exchange(args.db, args.suite);
  d.hidden_exchange = render_hidden_exchange_markdown(hidden);
  if (!hidden.empty()) {
    write_hidden_exchange_plot(hidden, plot_dir, out.render);
    d.plots.push_back(plots_rel + "/hidden_exchange.svg");
  }
  std::vector<RunProvenance> runs = load_provenance(args.db, args.suite);
  if (!args.claims.empty()) claim_history(args, rows, runs, d);
  for (auto& r : runs)
    if (!r.command.empty()) r.command = portable_command(r.command, out.shown_db, args.claims);
  d.provenance = render_provenance_markdown(runs);
  if (!args.findings.empty()) d.findings = read_text_file(args.findings, "findings file");
  std::ofstream(out.path, std::ios::binary) << render_document(d);
  std::fprintf(stderr, "cedar report: %s written, plots in %s\n", out.path.c_str(),
               plot_dir.c_str());
  if (!out.dump) return;
  const std::string dump = document_dump_path(out.path);
  write_gzip_file(dump, dump_suite_sql(args.db, args.suite));
  const uintmax_t bytes = fs::file_size(dump);
  std::fprintf(stderr, "cedar report: %s written (%.2f MB), the runs it regenerates from\n",
               dump.c_str(), static_cast<double>(bytes) / 1e6);
  if (bytes > kDumpWarnBytes)
    std::fprintf(stderr, "cedar report: %s is over 5 MiB: too large to keep beside the document\n",
                 dump.c_str());
}

int regenerate_document(const ReportArgs& args,
                        int (*report)(const ReportArgs&, const DocumentOutput&)) {
  const DocumentArguments recorded =
      read_document_arguments(read_text_file(args.regenerate, "document"), args.regenerate);
  const std::string dump = document_dump_path(args.regenerate);
  if (!fs::exists(dump))
    throw std::runtime_error(args.regenerate + ": no results dump " + dump +
                             " beside it: write the document with cedar report --document first");
  TemporaryFolder tmp;
  ReportArgs r;
  r.db = tmp.path + "/results.db";
  load_sql_dump(read_gzip_file(dump), r.db);
  r.suite = recorded.suite;
  r.claims = recorded.claims;
  r.findings = recorded.findings;
  r.networks = recorded.networks;
  r.latency_profile = recorded.latency_profile;
  r.target = recorded.target;
  r.workers = recorded.workers;
  r.document = recorded.document;
  r.results_mode = "wal";
  DocumentOutput out;
  out.shown_db = recorded.db;
  out.dump = false;
  out.print = false;
  if (args.output_dir.empty()) {
    out.path = args.regenerate;
  } else {
    fs::create_directories(args.output_dir);
    out.path = (fs::path(args.output_dir) / fs::path(args.regenerate).filename()).string();
    out.render = false;
  }
  return report(r, out);
}

}  // namespace cedar
