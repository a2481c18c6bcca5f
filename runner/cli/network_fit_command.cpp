// `cedar network fit`: a network profile fitted again from the medians `cedar network calibrate
// --timings` wrote (comm/collective_timings_file.h), over the sizes asked for, without timing the
// link again: a link whose rate changes with the message size (Open MPI's large allreduces over
// TCP) is fitted on the sizes a run's buckets have, or per size band (--bands). Several files of
// the same links are fitted together.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/collective_timings_file.h"
#include "comm/held_out_timings.h"
#include "reports/median.h"
#include "runner/cli/commands.h"
#include "runner/cli/network_profile_fit.h"

namespace cedar {
namespace {

struct NetworkFitArgs {
  std::vector<std::string> timings;  // the files calibrate --timings wrote (the same links)
  std::string out, name;             // the profile written, its name
  std::string measured_on;           // empty: the timings file's
  int64_t min_bytes = 0;             // sizes fitted: min_bytes..max_bytes (0: no bound)
  int64_t max_bytes = 0;
  std::vector<int64_t> bands;         // size band edges (comm/calibrated_profile.h)
  bool segments = false;              // bands at every size timed (comm/calibrated_profile.h)
  std::vector<std::string> held_out;  // timings files priced on the profile, not fitted
};

// What a profile fitted in segments says of itself (tests/checks/refit_profiles.sh reads it).
constexpr const char* kSegmentsNote = "size bands in segments between the sizes timed";

std::string join(const std::vector<std::string>& files) {
  std::string s;
  for (const std::string& f : files) s += (s.empty() ? "" : ", ") + f;
  return s;
}

// Every held-out median priced on `p`, then the median |error| per collective and P and over all.
void print_held_out(const NetworkProfile& p, const std::vector<CollectiveTiming>& held_out,
                    const std::string& files) {
  const std::vector<HeldOutPrice> prices = price_held_out(p, held_out);
  std::printf(
      "\nHeld out (%s): each median priced on the profile, which was not fitted on it\n\n"
      "| collective | P | bytes | timed s per call | modeled s per call | (modeled − timed) / "
      "timed |\n|---|---:|---:|---:|---:|---:|\n",
      files.c_str());
  std::map<std::pair<std::string, int>, std::vector<double>> by_fit;
  std::vector<double> all;
  for (const HeldOutPrice& h : prices) {
    const double e = h.relative_error();
    std::printf("| %s | %d | %lld | %.6g | %.6g | %+.1f%% |\n", h.timed.op.c_str(), h.timed.world,
                static_cast<long long>(h.timed.bytes), h.timed.seconds, h.modeled, 100 * e);
    by_fit[{h.timed.op, h.timed.world}].push_back(std::abs(e));
    all.push_back(std::abs(e));
  }
  std::printf("\n| collective | P | sizes | median |error| |\n|---|---:|---:|---:|\n");
  for (const auto& [key, errors] : by_fit)
    std::printf("| %s | %d | %zu | %.1f%% |\n", key.first.c_str(), key.second, errors.size(),
                100 * median_of(errors));
  std::printf("| every one | | %zu | %.1f%% |\n", all.size(), 100 * median_of(all));
}

std::vector<CollectiveTiming> load_all(const std::vector<std::string>& files) {
  std::vector<CollectiveTiming> out;
  for (const std::string& f : files) {
    const CollectiveTimingsFile one = load_collective_timings(f);
    out.insert(out.end(), one.timings.begin(), one.timings.end());
  }
  return out;
}

int command_network_fit(const NetworkFitArgs& a) {
  if (a.max_bytes > 0 && a.max_bytes < a.min_bytes)
    throw std::invalid_argument("--max-bytes: " + std::to_string(a.max_bytes) +
                                " is below --min-bytes " + std::to_string(a.min_bytes));
  // Several calibrations of the same links (e.g. some collectives timed to larger sizes than
  // others) are fitted together: their measured_on must agree unless --measured-on overrides it.
  CollectiveTimingsFile file;
  for (size_t i = 0; i < a.timings.size(); ++i) {
    CollectiveTimingsFile one = load_collective_timings(a.timings[i]);
    if (i == 0)
      file.measured_on = one.measured_on;
    else if (one.measured_on != file.measured_on && a.measured_on.empty())
      throw std::invalid_argument(a.timings[i] + ": measured on \"" + one.measured_on + "\", " +
                                  a.timings[0] + " on \"" + file.measured_on +
                                  "\": fit timings of one set of links together, or say where "
                                  "with --measured-on");
    file.timings.insert(file.timings.end(), one.timings.begin(), one.timings.end());
  }
  std::vector<CollectiveTiming> kept;
  for (const CollectiveTiming& t : file.timings)
    if (t.bytes >= double(a.min_bytes) && (a.max_bytes == 0 || t.bytes <= double(a.max_bytes)))
      kept.push_back(t);
  std::string where = a.measured_on.empty() ? file.measured_on : a.measured_on;
  // A profile fitted on part of the sweep says which part.
  if (kept.size() < file.timings.size())
    where += (where.empty() ? "" : "; ") + std::string("fitted on ") + byte_size_text(a.min_bytes) +
             " to " +
             (a.max_bytes > 0 ? byte_size_text(a.max_bytes) : std::string("the largest size"));
  if (kept.empty())
    throw std::invalid_argument(join(a.timings) + ": no timing lies within --min-bytes " +
                                std::to_string(a.min_bytes) + " and --max-bytes " +
                                std::to_string(a.max_bytes));
  if (!a.bands.empty()) {
    std::string edges;
    for (int64_t e : a.bands) edges += (edges.empty() ? "" : ", ") + byte_size_text(e);
    where += (where.empty() ? "" : "; ") + std::string("size bands from ") + edges;
  }
  if (a.segments) where += (where.empty() ? "" : "; ") + std::string(kSegmentsNote);
  const NetworkProfile p =
      a.segments ? fit_network_profile_segments(kept, a.name, where)
                 : fit_network_profile(kept, a.name, where,
                                       std::vector<double>(a.bands.begin(), a.bands.end()));
  write_fitted_profile(p, kept, a.out, "fit");
  if (!a.held_out.empty()) print_held_out(p, load_all(a.held_out), join(a.held_out));
  return 0;
}

}  // namespace

void add_network_fit_command(CLI::App& network, Subcommands& out) {
  auto args = std::make_shared<NetworkFitArgs>();
  auto* fit = network.add_subcommand(
      "fit",
      "fit a network profile again from the timings `cedar network calibrate --timings` wrote, "
      "over a range of sizes, without timing the link again");
  fit->add_option("timings", args->timings,
                  "the timings files (YAML) of one set of links, fitted together")
      ->required()
      ->check(CLI::ExistingFile);
  fit->add_option("--out", args->out, "profile file to write (YAML)")->required();
  fit->add_option("--name", args->name, "the profile's name")->required();
  fit->add_option("--measured-on", args->measured_on,
                  "where it was measured, free text (default: the timings file's)");
  fit->add_option("--min-bytes", args->min_bytes, "fit sizes from this one up, e.g. 8MiB")
      ->transform(CLI::AsSizeValue(false));
  fit->add_option("--max-bytes", args->max_bytes, "fit sizes up to this one (0: no bound)")
      ->transform(CLI::AsSizeValue(false));
  fit->add_option("--bands", args->bands,
                  "also fit each collective per size band, split at these sizes, e.g. 1MiB,8MiB "
                  "(a message is costed on its band's fit)")
      ->delimiter(',')
      ->transform(CLI::AsSizeValue(false));
  fit->add_flag("--segments", args->segments,
                "instead of bands, a segment between every two sizes timed: each size is priced at "
                "its mean time, a size between two on the straight line between them, a larger "
                "one on the last segment")
      ->excludes("--bands");
  fit->add_option("--held-out", args->held_out,
                  "timings files (YAML) of the same links to price on the profile fitted, not to "
                  "fit: prints each size's modeled against timed seconds and the median error")
      ->check(CLI::ExistingFile);
  out.push_back({fit, [args] { return command_network_fit(*args); }});
}

}  // namespace cedar
