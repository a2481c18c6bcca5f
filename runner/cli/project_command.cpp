// `cedar project`: time per epoch of each run projected to more workers (reports/projection.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "comm/network_model.h"
#include "comm/network_profile_file.h"
#include "reports/projection.h"
#include "runner/cli/commands.h"

namespace cedar {

int command_project(const ProjectArgs& args) {
  const NetworkProfile net = find_network_profile_in(args.networks, args.network);
  const NetworkProfile intra_profile =
      args.intra_network.empty() ? NetworkProfile{}
                                 : find_network_profile_in(args.networks, args.intra_network);
  const NetworkProfile* intra = args.intra_network.empty() ? nullptr : &intra_profile;
  if (args.run_id < 0)
    throw std::invalid_argument("--run-id: " + std::to_string(args.run_id) + " is not a run id");
  for (int w : args.workers)
    if (w < 1)
      throw std::invalid_argument("--workers: " + std::to_string(w) +
                                  " is not a positive worker count");

  std::vector<RunMeasurement> subjects, baselines;
  if (args.run_id > 0) {
    subjects = load_measurements(args.db, "", args.run_id);
    if (subjects.empty())
      throw std::runtime_error(args.db + ": no run with id " + std::to_string(args.run_id));
    if (!args.suite.empty() && subjects[0].suite != args.suite)
      throw std::runtime_error(args.db + ": run " + std::to_string(args.run_id) +
                               " belongs to suite '" + subjects[0].suite + "', not '" + args.suite +
                               "'");
    if (!subjects[0].unusable.empty())
      throw std::runtime_error(args.db + ": run " + std::to_string(args.run_id) + " (" +
                               subjects[0].name + ") cannot be projected: " + subjects[0].unusable);
    baselines = load_measurements(args.db, subjects[0].suite);
  } else {
    subjects = load_measurements(args.db, args.suite);
    baselines = subjects;
  }
  for (const auto& m : subjects)
    if (!m.unusable.empty())
      std::fprintf(stderr, "cedar project: skipped run %lld (%s): %s\n",
                   static_cast<long long>(m.id), m.name.c_str(), m.unusable.c_str());

  auto projections = project_runs(subjects, baselines, args.workers, net, intra);
  if (projections.empty())
    throw std::runtime_error(
        args.db + ": no completed run to project" +
        (args.suite.empty() ? std::string() : " in suite '" + args.suite + "'"));
  const std::string out = args.format == "csv" ? render_projection_csv(projections)
                                               : render_projection_markdown(projections);
  std::fputs(out.c_str(), stdout);
  return 0;
}

void add_project_command(CLI::App& app, Subcommands& out) {
  auto project_args = std::make_shared<ProjectArgs>();
  auto* project = app.add_subcommand(
      "project", "time per epoch of each run projected to more workers (α–β model)");
  project->add_option("db", project_args->db, "results database")->required();
  project->add_option("--suite", project_args->suite, "only this suite");
  project->add_option("--run-id", project_args->run_id, "only this run (runs.id)");
  project->add_option("--workers", project_args->workers, "worker counts, e.g. 8,64,256")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  project
      ->add_option("--network", project_args->network,
                   "network profile (1gbe, 10gbe, 25gbe, 100gbe, ib-hdr, or one in --networks)")
      ->capture_default_str();
  project->add_option("--intra-network", project_args->intra_network,
                      "profile of the traffic inside a node (level intra) of runs with levels "
                      "(default: the one each run recorded, network.intra_profile)");
  project->add_option("--format", project_args->format, "md or csv")
      ->check(CLI::IsMember({"md", "csv"}))
      ->capture_default_str();

  project->add_option("--networks", project_args->networks,
                      "YAML file of network profiles besides the built-in ones (e.g. one "
                      "`cedar network calibrate` wrote); --network and --intra-network may name "
                      "them");
  out.push_back({project, [project_args] { return command_project(*project_args); }});
}

}  // namespace cedar
