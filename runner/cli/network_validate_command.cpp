// `cedar network validate`: the α–β model against seconds measured on the virtual cluster's shaped
// links, from one results database per rate and the profiles calibrated on those links
// (reports/link_validation.h); with --document, docs/network_validation.md and its plots.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "reports/link_validation.h"
#include "runner/cli/commands.h"
#include "runner/cli/network_validate_document.h"

namespace cedar {
namespace {

struct NetworkValidateArgs {
  LinkValidationArguments run;  // databases (one per rate), profiles, suite, warm-up, target...
  bool no_render = false;       // --document: plots as data and scripts only
  std::string regenerate;       // write this document again from the data beside it
  std::string output_dir;       // --regenerate: into this folder instead of over the document
};

int command_network_validate(const NetworkValidateArgs& a) {
  if (!a.regenerate.empty()) {
    if (!a.run.databases.empty() || !a.run.profiles.empty() || !a.run.document.empty())
      throw std::runtime_error(
          "cedar network validate --regenerate: the document names its databases and profiles; "
          "give no others (and no --document)");
    regenerate_link_validation(a.regenerate, a.output_dir);
    return 0;
  }
  if (!a.output_dir.empty())
    throw std::runtime_error("cedar network validate: --output-dir goes with --regenerate");
  if (a.run.databases.empty() || a.run.profiles.empty())
    throw std::runtime_error(
        "cedar network validate: give the results databases and --profiles (or --regenerate "
        "DOCUMENT)");
  if (!a.run.document.empty()) {
    write_link_validation_with_data(a.run, !a.no_render);
    return 0;
  }
  if (!a.run.findings.empty())
    throw std::runtime_error("cedar network validate: --findings goes with --document");
  const LinkValidation v =
      validate_links(a.run.databases, a.run.profiles, a.run.suite, a.run.warmup, a.run.target);
  std::fputs(render_link_validation_markdown(v).c_str(), stdout);
  for (const auto& n : v.notes) std::fprintf(stderr, "cedar network validate: %s\n", n.c_str());
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
      ->add_option("databases", args->run.databases,
                   "results databases, one per rate, of runs with network.cluster: virtual")
      ->check(CLI::ExistingFile);
  validate
      ->add_option("--profiles", args->run.profiles,
                   "profile files `cedar network calibrate --cluster virtual` wrote on the runs' "
                   "links (each run is modeled with the one calibrated on its hosts, ranks per "
                   "host, rate and burst at its P)")
      ->check(CLI::ExistingFile);
  validate->add_option("--suite", args->run.suite, "only this suite");
  validate
      ->add_option("--warmup", args->run.warmup,
                   "steps at the start of each run left out (warm-up)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  validate
      ->add_option("--target", args->run.target,
                   "the median |relative error| at P = 4 aimed at (runs with communication at "
                   "least half the step)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  validate->add_option("--document", args->run.document,
                       "also write the whole validation as markdown (e.g. "
                       "docs/network_validation.md), its plots in <name>-plots/ and each "
                       "database's dump and profile file's copy in <name>-data/ beside it");
  validate->add_option("--findings", args->run.findings,
                       "--document: a markdown file of findings included as its own section");
  validate
      ->add_option("--regenerate", args->regenerate,
                   "write this document again from the dumps and profiles beside it, with the "
                   "arguments it records (no databases or profiles given)")
      ->check(CLI::ExistingFile);
  validate->add_option("--output-dir", args->output_dir,
                       "--regenerate: write the document and its plots' data and scripts here "
                       "(no gnuplot) instead of over it");
  validate->add_flag("--no-render", args->no_render,
                     "--document: write the plots' data and gnuplot scripts without running "
                     "gnuplot");
  out.push_back({validate, [args] { return command_network_validate(*args); }});
}

}  // namespace cedar
