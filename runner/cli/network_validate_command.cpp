// `cedar network validate`: the α–β model against seconds measured on the virtual cluster's shaped
// links, from one results database per rate and the profiles calibrated on those links
// (reports/link_validation.h); with --document, docs/network_validation.md and its plots.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "reports/link_validation.h"
#include "runner/cli/commands.h"
#include "runner/suite/launcher.h"

namespace cedar {
namespace {

struct NetworkValidateArgs {
  std::vector<std::string> databases;  // one per rate
  std::vector<std::string> profiles;   // files of `cedar network calibrate --cluster virtual`
  std::string suite;                   // only this suite ("" : every suite)
  int warmup = 2;                      // steps left out at the start of each run
  double target = 0.15;                // the median |relative error| at P = 4 aimed at
  std::string document;                // also write the document here, plots beside it
  bool no_render = false;              // --document: plots as data and scripts only
};

// The command as it can be run again from the repository's root.
std::string command_line(const NetworkValidateArgs& a) {
  std::string s = "build/cedar network validate";
  for (const auto& db : a.databases) s += " " + shell_word(db);
  s += " --profiles";
  for (const auto& p : a.profiles) s += " " + shell_word(p);
  if (!a.suite.empty()) s += " --suite " + shell_word(a.suite);
  s += " --warmup " + std::to_string(a.warmup);
  if (a.target != 0.15) s += " --target " + std::to_string(a.target);
  if (!a.document.empty()) s += " --document " + shell_word(a.document);
  return s;
}

int command_network_validate(const NetworkValidateArgs& a) {
  const LinkValidation v = validate_links(a.databases, a.profiles, a.suite, a.warmup, a.target);
  std::fputs(render_link_validation_markdown(v).c_str(), stdout);
  for (const auto& n : v.notes) std::fprintf(stderr, "cedar network validate: %s\n", n.c_str());
  if (a.document.empty()) return 0;
  LinkValidationDocument d;
  d.path = a.document;
  d.command = command_line(a);
  d.suite = a.suite;
  d.render = !a.no_render;
  write_link_validation_document(v, d);
  std::fprintf(stderr, "cedar network validate: %s written, plots beside it\n", a.document.c_str());
  return 0;
}

}  // namespace

void add_network_validate_command(CLI::App& network, Subcommands& out) {
  auto args = std::make_shared<NetworkValidateArgs>();
  auto* validate = network.add_subcommand(
      "validate",
      "the alpha-beta model against seconds measured on the virtual cluster's shaped links: per "
      "run, median measured and modeled communication per step, their relative error and "
      "communication's share of the step, and where each method beats dense SGD, measured over "
      "the rates and predicted from one rate");
  validate
      ->add_option("databases", args->databases,
                   "results databases, one per rate, of runs with network.cluster: virtual")
      ->required()
      ->check(CLI::ExistingFile);
  validate
      ->add_option("--profiles", args->profiles,
                   "profile files `cedar network calibrate --cluster virtual` wrote on the runs' "
                   "links (each run is modeled with the one calibrated on its hosts, ranks per "
                   "host, rate and burst at its P)")
      ->required()
      ->check(CLI::ExistingFile);
  validate->add_option("--suite", args->suite, "only this suite");
  validate
      ->add_option("--warmup", args->warmup, "steps at the start of each run left out (warm-up)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  validate
      ->add_option("--target", args->target,
                   "the median |relative error| at P = 4 aimed at (runs with communication at "
                   "least half the step)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  validate->add_option("--document", args->document,
                       "also write the whole validation as markdown (e.g. "
                       "docs/network_validation.md), its plots in <name>-plots/ beside it");
  validate->add_flag("--no-render", args->no_render,
                     "--document: write the plots' data and gnuplot scripts without running "
                     "gnuplot");
  out.push_back({validate, [args] { return command_network_validate(*args); }});
}

}  // namespace cedar
