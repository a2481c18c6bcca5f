// `cedar network fit`: a network profile fitted again from the medians `cedar network calibrate
// --timings` wrote (comm/collective_timings_file.h), over the sizes asked for, without timing the
// link again: a link whose rate changes with the message size (Open MPI's large allreduces over
// TCP) is fitted on the sizes a run's buckets have, or per size band (--bands). Several files of
// the same links are fitted together.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/collective_timings_file.h"
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
  std::vector<int64_t> bands;  // size band edges (comm/calibrated_profile.h)
};

std::string join(const std::vector<std::string>& files) {
  std::string s;
  for (const std::string& f : files) s += (s.empty() ? "" : ", ") + f;
  return s;
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
  fit_and_write_profile(kept, a.name, where, a.out, "fit",
                        std::vector<double>(a.bands.begin(), a.bands.end()));
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
  out.push_back({fit, [args] { return command_network_fit(*args); }});
}

}  // namespace cedar
