#include "comm/calibrated_profile.h"

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "comm/alpha_beta_least_squares.h"

namespace cedar {

namespace {

// The bands of one (op, P): a fit per band of `samples` (their sizes in `bytes`, in step).
std::vector<SizeBand> fit_bands(const std::vector<TimedSample>& samples,
                                const std::vector<double>& bytes, const std::vector<double>& edges,
                                const std::string& what) {
  std::vector<SizeBand> bands;
  for (size_t b = 0; b <= edges.size(); ++b) {
    const double from = b == 0 ? 0 : edges[b - 1];
    const double below = b < edges.size() ? edges[b] : std::numeric_limits<double>::infinity();
    std::vector<TimedSample> in;
    std::set<double> sizes;
    for (size_t i = 0; i < samples.size(); ++i)
      if (bytes[i] >= from && bytes[i] < below) {
        in.push_back(samples[i]);
        sizes.insert(bytes[i]);
      }
    if (sizes.empty()) continue;  // the band below reaches over it
    if (sizes.size() < 2)
      throw std::invalid_argument(
          "calibration: " + what + ": the band " +
          (b == 0
               ? "below " + byte_size_text(below)
               : "from " + byte_size_text(from) +
                     (b < edges.size() ? " below " + byte_size_text(below) : std::string(" on"))) +
          " has " + std::to_string(sizes.size()) + (sizes.size() == 1 ? " size" : " sizes") +
          ": alpha and beta need two or more (move the edges or time more sizes)");
    const AlphaBetaFit f = fit_alpha_beta(in);
    bands.push_back({bands.empty() ? 0 : from, {f.alpha, f.beta}});
  }
  return bands;
}

// The segments of one (op, P) (calibrated_profile.h): its sizes' mean times, in increasing size.
std::vector<SizeBand> fit_segments(const std::string& op, int world,
                                   const std::vector<CollectiveTiming>& timings) {
  std::map<double, std::pair<double, int>> sum_count;  // size -> sum of seconds, count
  for (const CollectiveTiming& t : timings) {
    auto& [sum, count] = sum_count[t.bytes];
    sum += t.seconds;
    ++count;
  }
  std::vector<TimedSample> points;
  std::vector<double> sizes;
  for (const auto& [bytes, sc] : sum_count) {
    TimedSample s = collective_terms(op, world, bytes);
    s.seconds = sc.first / sc.second;
    points.push_back(s);
    sizes.push_back(bytes);
  }
  std::vector<SizeBand> bands;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const TimedSample& a = points[i];
    const TimedSample& b = points[i + 1];
    // L is the same at every size of one (op, P): the line's slope is β, its intercept L·α.
    const double beta = (b.seconds - a.seconds) / (b.bus_bytes - a.bus_bytes);
    const double alpha = (a.seconds - beta * a.bus_bytes) / a.latency_steps;
    AlphaBeta fit{alpha, beta};
    if (a.latency_steps <= 0 || beta < 0 || (i == 0 && alpha < 0)) {
      const AlphaBetaFit bounded = fit_alpha_beta({a, b});
      fit = {bounded.alpha, bounded.beta};
    }
    bands.push_back({i == 0 ? 0 : sizes[i], fit});
  }
  return bands;
}

}  // namespace

NetworkProfile fit_network_profile_segments(const std::vector<CollectiveTiming>& timings,
                                            const std::string& name,
                                            const std::string& measured_on) {
  NetworkProfile profile = fit_network_profile(timings, name, measured_on);
  std::map<std::pair<std::string, int>, std::vector<CollectiveTiming>> groups;
  for (const CollectiveTiming& t : timings) groups[{t.op, t.world}].push_back(t);
  for (const auto& [key, group] : groups)
    profile.size_bands[key.first][key.second] = fit_segments(key.first, key.second, group);
  return profile;
}

NetworkProfile fit_network_profile(const std::vector<CollectiveTiming>& timings,
                                   const std::string& name, const std::string& measured_on,
                                   const std::vector<double>& band_edges) {
  if (timings.empty()) throw std::invalid_argument("calibration: no timings to fit");
  for (size_t i = 0; i < band_edges.size(); ++i)
    if (!(band_edges[i] > 0) || (i > 0 && !(band_edges[i] > band_edges[i - 1])))
      throw std::invalid_argument("calibration: band edges must be above 0 and increase, not " +
                                  byte_size_text(band_edges[i]) +
                                  (i > 0 ? " after " + byte_size_text(band_edges[i - 1]) : ""));
  std::map<std::pair<std::string, int>, std::vector<TimedSample>> groups;
  std::map<std::pair<std::string, int>, std::vector<double>> sample_bytes;  // in step with groups
  for (const auto& t : timings) {
    TimedSample s = collective_terms(t.op, t.world, t.bytes);
    s.seconds = t.seconds;
    groups[{t.op, t.world}].push_back(s);
    sample_bytes[{t.op, t.world}].push_back(t.bytes);
  }
  NetworkProfile profile{name, 0, 0};
  profile.measured_on = measured_on;
  for (const auto& [key, samples] : groups) {
    const std::vector<double>& bytes = sample_bytes[key];
    if (std::set<double>(bytes.begin(), bytes.end()).size() < 2)
      throw std::invalid_argument("calibration: " + key.first +
                                  " at P = " + std::to_string(key.second) +
                                  " has one size only: alpha and beta need two or more");
    const AlphaBetaFit f = fit_alpha_beta(samples);
    profile.collectives[key.first][key.second] = {f.alpha, f.beta};
    if (!band_edges.empty())
      profile.size_bands[key.first][key.second] = fit_bands(
          samples, bytes, band_edges, key.first + " at P = " + std::to_string(key.second));
  }
  const auto it = profile.collectives.count("allreduce") ? profile.collectives.find("allreduce")
                                                         : profile.collectives.begin();
  const AlphaBeta largest = it->second.rbegin()->second;
  profile.alpha = largest.alpha;
  profile.beta = largest.beta;
  return profile;
}

}  // namespace cedar
