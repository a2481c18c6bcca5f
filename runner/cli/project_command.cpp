// `cedar project`: time per epoch of each run projected to more workers (reports/projection.h).
#include <cstdio>
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

}  // namespace cedar
