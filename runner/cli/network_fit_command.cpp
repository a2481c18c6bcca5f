// `cedar network fit`: a network profile fitted again from the medians `cedar network calibrate
// --timings` wrote (comm/collective_timings_file.h), over the sizes asked for, without timing the
// link again: a link whose rate changes with the message size (Open MPI's large allreduces over
// TCP) is fitted on the sizes a run's buckets have.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "comm/collective_timings_file.h"
#include "runner/cli/commands.h"
#include "runner/cli/network_profile_fit.h"

namespace cedar {
namespace {

struct NetworkFitArgs {
  std::string timings;      // the file calibrate --timings wrote
  std::string out, name;    // the profile written, its name
  std::string measured_on;  // empty: the timings file's
  int64_t min_bytes = 0;    // sizes fitted: min_bytes..max_bytes (0: no bound)
  int64_t max_bytes = 0;
};

std::string size_text(int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

int command_network_fit(const NetworkFitArgs& a) {
  if (a.max_bytes > 0 && a.max_bytes < a.min_bytes)
    throw std::invalid_argument("--max-bytes: " + std::to_string(a.max_bytes) +
                                " is below --min-bytes " + std::to_string(a.min_bytes));
  const CollectiveTimingsFile file = load_collective_timings(a.timings);
  std::vector<CollectiveTiming> kept;
  for (const CollectiveTiming& t : file.timings)
    if (t.bytes >= double(a.min_bytes) && (a.max_bytes == 0 || t.bytes <= double(a.max_bytes)))
      kept.push_back(t);
  std::string where = a.measured_on.empty() ? file.measured_on : a.measured_on;
  // A profile fitted on part of the sweep says which part.
  if (kept.size() < file.timings.size())
    where += (where.empty() ? "" : "; ") + std::string("fitted on ") + size_text(a.min_bytes) +
             " to " + (a.max_bytes > 0 ? size_text(a.max_bytes) : std::string("the largest size"));
  if (kept.empty())
    throw std::invalid_argument(a.timings + ": no timing lies within --min-bytes " +
                                std::to_string(a.min_bytes) + " and --max-bytes " +
                                std::to_string(a.max_bytes));
  fit_and_write_profile(kept, a.name, where, a.out, "fit");
  return 0;
}

}  // namespace

void add_network_fit_command(CLI::App& network, Subcommands& out) {
  auto args = std::make_shared<NetworkFitArgs>();
  auto* fit = network.add_subcommand(
      "fit",
      "fit a network profile again from the timings `cedar network calibrate --timings` wrote, "
      "over a range of sizes, without timing the link again");
  fit->add_option("timings", args->timings, "the timings file (YAML)")
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
  out.push_back({fit, [args] { return command_network_fit(*args); }});
}

}  // namespace cedar
