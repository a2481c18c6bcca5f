#include "comm/calibrated_profile.h"

#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "comm/alpha_beta_least_squares.h"

namespace cedar {

NetworkProfile fit_network_profile(const std::vector<CollectiveTiming>& timings,
                                   const std::string& name, const std::string& measured_on) {
  if (timings.empty()) throw std::invalid_argument("calibration: no timings to fit");
  std::map<std::pair<std::string, int>, std::vector<TimedSample>> groups;
  std::map<std::pair<std::string, int>, std::set<double>> sizes;
  for (const auto& t : timings) {
    TimedSample s = collective_terms(t.op, t.world, t.bytes);
    s.seconds = t.seconds;
    groups[{t.op, t.world}].push_back(s);
    sizes[{t.op, t.world}].insert(t.bytes);
  }
  NetworkProfile profile{name, 0, 0};
  profile.measured_on = measured_on;
  for (const auto& [key, samples] : groups) {
    if (sizes[key].size() < 2)
      throw std::invalid_argument("calibration: " + key.first +
                                  " at P = " + std::to_string(key.second) +
                                  " has one size only: alpha and beta need two or more");
    const AlphaBetaFit f = fit_alpha_beta(samples);
    profile.collectives[key.first][key.second] = {f.alpha, f.beta};
  }
  const auto it = profile.collectives.count("allreduce") ? profile.collectives.find("allreduce")
                                                         : profile.collectives.begin();
  const AlphaBeta largest = it->second.rbegin()->second;
  profile.alpha = largest.alpha;
  profile.beta = largest.beta;
  return profile;
}

}  // namespace cedar
