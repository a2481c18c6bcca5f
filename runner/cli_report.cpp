// `cedar report`: tables from the results database.
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "reports/claims.h"
#include "reports/comparison.h"
#include "reports/crossover.h"
#include "reports/plots.h"
#include "runner/comm/network_profile_file.h"
#include "reports/provenance_table.h"
#include "results/store.h"
#include "runner/cli_commands.h"

namespace cedar {

int command_report(const ReportArgs& args) {
  if (::access(args.db.c_str(), F_OK) != 0)
    throw std::runtime_error(args.db + ": no such results database");
  // Runs whose process died without a word (kill -9, a lost node) show as failed, not running.
  if (int stale = ResultStore(args.db).mark_stale_runs())
    std::fprintf(stderr, "%s: %d run(s) left 'running' by a process that is gone: marked failed\n",
                 args.db.c_str(), stale);
  auto rows = compare_runs(load_runs(args.db, args.suite, args.target), args.target);
  if (rows.empty())
    throw std::runtime_error(args.db + ": no finished runs" +
                             (args.suite.empty() ? std::string() : " in suite '" + args.suite + "'"));
  std::string out;
  if (args.format == "md") out = render_markdown(rows);
  else if (args.format == "csv") out = render_csv(rows);
  else out = render_latex(rows);
  std::fputs(out.c_str(), stdout);
  if (!args.claims.empty()) {
    auto claims = load_claims(args.claims);
    if (claims.empty()) throw std::runtime_error(args.claims + ": no claims: section");
    std::printf("\n%s", render_claims_markdown(
                                  evaluate_claims(claims, rows, database_window_reader(args.db, args.suite)))
                                  .c_str());
  }
  if (args.crossover) {
    std::vector<NetworkProfile> profiles = network_profiles();
    if (!args.networks.empty())
      for (auto& p : load_network_profiles(args.networks)) profiles.push_back(p);
    const NetworkProfile* latency = nullptr;
    for (const auto& p : profiles)
      if (p.name == args.latency_profile) latency = &p;
    if (!latency)
      throw std::runtime_error("--latency-profile: unknown profile '" + args.latency_profile + "'");
    auto points = crossover(load_measurements(args.db, args.suite), args.workers, latency->alpha, profiles);
    std::printf("\n### When does compression help?\n\n%s",
                render_crossover_markdown(points, latency->alpha, profiles).c_str());
    if (!args.plots.empty()) write_crossover_plot(points, args.plots);
  }
  if (args.provenance)
    std::printf("\n### Provenance\n\n%s",
                render_provenance_markdown(load_provenance(args.db, args.suite)).c_str());
  if (!args.plots.empty()) {
    PlotOutput plots = write_plots(args.db, args.suite, args.plots);
    std::fprintf(stderr, "cedar report: %zu plots in %s\n", plots.scripts.size(), args.plots.c_str());
  }
  return 0;
}

}  // namespace cedar
