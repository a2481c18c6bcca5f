// Measured against modeled communication per run (reports/link_validation.h).
#include "reports/link_validation.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>
#include <tuple>

#include "comm/network_profile_file.h"
#include "reports/median.h"
#include "reports/projection.h"
#include "results/comm_queries.h"
#include "results/run_queries.h"
#include "results/step_queries.h"

namespace cedar {
namespace {

std::string count_of(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

constexpr const char* kVirtualCluster = "virtual cluster: ";

// The profile was calibrated on `links` (its measured_on, as `cedar network calibrate --cluster
// virtual` writes it) and has fits at P = `world`.
bool calibrated_on(const NetworkProfile& p, const ShapedLinks& links) {
  return p.measured_on.rfind(kVirtualCluster + describe_links(links) + ", ", 0) == 0;
}
bool has_fits_at(const NetworkProfile& p, int world) {
  for (const auto& [op, fits] : p.collectives)
    if (fits.count(world)) return true;
  return false;
}
std::string fitted_sizes(const NetworkProfile& p) {
  std::set<int> worlds;
  for (const auto& [op, fits] : p.collectives)
    for (const auto& [world, f] : fits) worlds.insert(world);
  std::string s;
  for (int w : worlds) s += (s.empty() ? "P = " : ", ") + std::to_string(w);
  return s.empty() ? "none" : s;
}

// The index of the profile calibrated on `links` with fits at P = `world` (-1: none). When
// `strict`, throws when a profile calibrated there has no fits at that P and no other one does.
int find_profile(const LinkValidation& v, const ShapedLinks& links, int world, bool strict = true) {
  int there = -1;
  for (size_t i = 0; i < v.profiles.size(); ++i) {
    if (!calibrated_on(v.profiles[i].profile, links)) continue;
    if (has_fits_at(v.profiles[i].profile, world)) return static_cast<int>(i);
    there = static_cast<int>(i);
  }
  if (there >= 0 && strict) {
    const ProfileSource& p = v.profiles[static_cast<size_t>(there)];
    throw std::runtime_error(p.file + ": profile '" + p.profile.name + "' was calibrated on " +
                             describe_links(links) + " but has fits at " + fitted_sizes(p.profile) +
                             ", not at P = " + std::to_string(world) +
                             ": calibrate with --world-sizes " + std::to_string(world));
  }
  return -1;
}

std::string profiles_listing(const LinkValidation& v) {
  std::string s;
  for (const auto& p : v.profiles)
    s += "\n  " + p.file + ": '" + p.profile.name + "', " +
         (p.profile.measured_on.empty() ? std::string("nominal (not calibrated)")
                                        : "measured on " + p.profile.measured_on);
  return s;
}

// Each collective's fit at `ranks` (its size band for the mix's mean message, where the fit has
// bands), weighted by its share of the α terms and of the bus bytes of
// the mix (the top of link_validation.h).
AlphaBeta weighted_fit(const std::vector<CollectiveMix>& mixes, int ranks, AllreduceScheme scheme,
                       const NetworkProfile& p) {
  double latency = 0, bytes = 0, alpha_terms = 0, beta_terms = 0;
  for (const auto& mix : mixes) {
    const CollectiveCost c = collective_cost(mix, ranks, scheme);
    const AlphaBeta f = p.fit_for(mix.op, ranks, mean_message_bytes(mix));
    latency += c.latency_steps;
    bytes += c.bus_bytes;
    alpha_terms += f.alpha * c.latency_steps;
    beta_terms += f.beta * c.bus_bytes;
  }
  return {latency > 0 ? alpha_terms / latency : p.alpha, bytes > 0 ? beta_terms / bytes : p.beta};
}

// How each level of a hierarchical run is costed, and the words saying so.
struct LevelModel {
  AlphaBeta fit;
  std::string label;
  int profile = -1;  // the index of the profile given whose fits at `world` it took (-1: none)
  int world = 0;
};
}  // namespace

bool fitted_within_a_host(const NetworkProfile& p, const ShapedLinks& links, int ranks) {
  return ranks >= 2 && links.ranks_per_host >= ranks && has_fits_at(p, ranks);
}

namespace {

// Erases the entries at P up to `ranks` of every op's map by P.
template <typename ByOp>
void erase_up_to(ByOp& by_op, int ranks) {
  for (auto& [op, by_world] : by_op)
    for (auto it = by_world.begin(); it != by_world.end();)
      it = it->first <= ranks ? by_world.erase(it) : std::next(it);
}

// `p` without its fits at P up to `ranks_per_host` (above 1): on links of that many ranks per
// host, calibrate's first P ranks of those sizes shared one host and never crossed a link.
NetworkProfile between_hosts(NetworkProfile p, int ranks_per_host) {
  if (ranks_per_host < 2) return p;
  erase_up_to(p.collectives, ranks_per_host);
  erase_up_to(p.size_bands, ranks_per_host);
  return p;
}

std::map<std::string, LevelModel> level_models(const LinkValidation& v, const RunMeasurement& m,
                                               const LinkValidationRow& row) {
  std::map<std::string, LevelModel> out;
  const NetworkProfile& own = v.profiles[static_cast<size_t>(row.profile)].profile;
  for (const LevelMix& level : m.levels) {
    const AllreduceScheme scheme = allreduce_scheme_for_level(m.allreduce, level.name);
    if (level.name == "intra") {
      // Inside a host: the run's own profile where it was calibrated there at the level's ranks.
      if (fitted_within_a_host(own, row.links, int(level.ranks))) {
        out[level.name] = {weighted_fit(level.collectives, level.ranks, scheme, own),
                           "intra: " + own.name + " at P = " + std::to_string(level.ranks) +
                               " (fits timed within a host)",
                           row.profile, int(level.ranks)};
        continue;
      }
      const NetworkProfile& p = find_network_profile(level.profile.empty() ? "shm" : level.profile);
      out[level.name] = {{p.alpha, p.beta}, "intra: " + p.name + ", " + p.provenance()};
      continue;
    }
    // Between hosts: one rank per host takes part, as on links of one rank per host.
    ShapedLinks one = row.links;
    one.ranks_per_host = 1;
    const int index = find_profile(v, one, level.ranks, /*strict=*/false);
    const NetworkProfile p = index >= 0 ? v.profiles[static_cast<size_t>(index)].profile
                                        : between_hosts(own, row.links.ranks_per_host);
    out[level.name] = {weighted_fit(level.collectives, level.ranks, scheme, p),
                       level.name + ": " + p.name + " at P = " + std::to_string(level.ranks), index,
                       int(level.ranks)};
  }
  return out;
}

// Fills the row's medians from the run's steps.
void measure(const LinkValidation& v, ResultsReader& db, const RunMeasurement& m,
             LinkValidationRow& row) {
  const NetworkProfile& own = v.profiles[static_cast<size_t>(row.profile)].profile;
  const bool server = m.servers > 0;
  double per_round = 0;  // a parameter server's modeled seconds per round
  if (server) {
    const ProjectionPoint pt = project_point(m, measured_workers(m), own);
    per_round = pt.steps_per_epoch > 0 ? pt.comm_seconds / pt.steps_per_epoch : 0;
  }
  const AlphaBeta fit = weighted_fit(m.collectives, row.world_size, m.allreduce, own);
  const std::map<std::string, LevelModel> levels = level_models(v, m, row);
  for (const auto& [name, model] : levels) {
    row.level_profiles += (row.level_profiles.empty() ? "" : "; ") + model.label;
    if (model.profile >= 0) row.level_fits.push_back({model.profile, model.world});
  }
  std::map<int64_t, std::vector<StepLevelTerms>> level_terms;
  for (StepLevelTerms& t : read_step_level_terms(db, m.id)) level_terms[t.step].push_back(t);

  std::vector<double> measured, modeled, compute;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_level;
  double steps_after = 0, step_sum = 0, compute_sum = 0;
  for (const StepSeconds& s : read_step_seconds(db, m.id)) {
    if (s.step < v.warmup_steps) continue;
    ++steps_after;
    step_sum += s.comm_seconds + s.compute_seconds;
    compute_sum += s.compute_seconds;
    if (s.bus_bytes <= 0) continue;
    double seconds = per_round;
    if (!server) {
      int64_t latency = s.latency_steps, bytes = s.bus_bytes;
      seconds = 0;
      for (const StepLevelTerms& t : level_terms[s.step]) {
        latency -= t.latency_steps;
        bytes -= t.bus_bytes;
        const auto it = levels.find(t.level);
        if (it == levels.end()) continue;  // a level comm_totals has no traffic of
        const double level_seconds = it->second.fit.alpha * double(t.latency_steps) +
                                     it->second.fit.beta * double(t.bus_bytes);
        seconds += level_seconds;
        if (t.comm_seconds) {
          by_level[t.level].first.push_back(*t.comm_seconds);
          by_level[t.level].second.push_back(level_seconds);
        }
      }
      seconds += fit.alpha * double(latency) + fit.beta * double(bytes);
    }
    measured.push_back(s.comm_seconds);
    modeled.push_back(seconds);
    compute.push_back(s.compute_seconds);
  }
  row.steps = static_cast<int>(measured.size());
  if (steps_after > 0) {
    row.mean_step_seconds = step_sum / steps_after;
    row.mean_compute = compute_sum / steps_after;
  }
  if (measured.empty()) {
    row.excluded = "no step after the first " + count_of(v.warmup_steps, "step") +
                   " moved bytes (" + count_of(int(steps_after), "step") + " after them)";
    return;
  }
  row.measured_comm = median_of(measured);
  row.modeled_comm = median_of(modeled);
  row.compute = median_of(compute);
  for (const auto& [name, seconds] : by_level)
    row.levels.push_back({name, median_of(seconds.first), median_of(seconds.second)});
  if (!(row.measured_comm > 0)) row.excluded = "measured no time inside the communicator";
}

void add_database(LinkValidation& v, const std::string& path, const std::string& suite) {
  if (!std::ifstream(path)) throw std::runtime_error(path + ": no such results database");
  const std::vector<RunMeasurement> runs = load_measurements(path, suite);
  ResultsReader db(path);
  std::map<int64_t, std::string> provenance;
  for (const RunRow& r : read_shown_runs(db, suite)) provenance[r.id] = r.provenance.value_or("");
  std::set<std::string> rates;
  std::vector<std::string> unshaped;
  size_t added = 0;
  for (const RunMeasurement& m : runs) {
    std::optional<ShapedLinks> links;
    try {
      links = shaped_links_of(provenance[m.id]);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(path + ": run '" + m.name + "' (id " + std::to_string(m.id) +
                               "): " + e.what());
    }
    if (!links) {
      unshaped.push_back(m.name);
      continue;
    }
    rates.insert(links->rate);
    LinkValidationRow row;
    row.database = path;
    row.name = m.name;
    row.algorithm = m.algorithm;
    row.run_id = m.id;
    row.world_size = static_cast<int>(m.world_size);
    row.servers = static_cast<int>(m.servers);
    row.links = *links;
    row.profile = find_profile(v, *links, row.world_size);
    if (row.profile < 0)
      throw std::runtime_error(
          path + ": run '" + m.name + "' (P = " + std::to_string(row.world_size) +
          ") was measured on " + describe_links(*links) +
          ", and no profile given was calibrated there:" + profiles_listing(v));
    if (!m.unusable.empty())
      row.excluded = m.unusable;
    else
      measure(v, db, m, row);
    // The modeled round stays in the row (and its test), the comparison does not.
    if (row.excluded.empty() && row.algorithm == "ps")
      row.excluded =
          "a parameter server's step row records one direction of a round (its seconds and bus "
          "bytes are the push alone), where the model costs the whole round (push and pull)";
    v.rows.push_back(row);
    ++added;
  }
  if (added == 0)
    throw std::runtime_error(
        path + ": no completed run" + (suite.empty() ? "" : " of suite '" + suite + "'") +
        " was measured on shaped links (" + count_of(int(unshaped.size()), "run") +
        " on the machine's own links): run the suite with network.cluster: virtual on the hosts "
        "of `cedar cluster up`");
  if (rates.size() > 1) {
    std::string list;
    for (const auto& r : rates) list += (list.empty() ? "" : ", ") + r;
    throw std::runtime_error(path + ": runs measured at several rates (" + list +
                             "): keep one database per rate (a run's fingerprint holds "
                             "network.cluster, not the rate)");
  }
  for (const auto& name : unshaped)
    v.notes.push_back(path + ": run '" + name +
                      "' left out: not measured on shaped links (no links in its provenance)");
}

}  // namespace

double link_rate_bits(const std::string& rate) {
  static const std::regex re("([0-9]+(\\.[0-9]+)?)(bit|kbit|mbit|gbit)");
  std::smatch m;
  if (!std::regex_match(rate, m, re))
    throw std::invalid_argument("rate '" + rate +
                                "': expected a number with bit, kbit, mbit or gbit (e.g. 1gbit)");
  const std::string unit = m[3].str();
  const double scale = unit == "bit" ? 1 : unit == "kbit" ? 1e3 : unit == "mbit" ? 1e6 : 1e9;
  return std::stod(m[1].str()) * scale;
}

std::optional<ShapedLinks> shaped_links_of(const std::string& provenance_json) {
  const nlohmann::json j = nlohmann::json::parse(provenance_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto it = j.find("links");
  if (it == j.end() || !it->is_object()) return std::nullopt;
  const nlohmann::json& l = *it;
  auto text = [&](const char* key) {
    return l.contains(key) && l[key].is_string() ? l[key].get<std::string>() : std::string();
  };
  auto number = [&](const char* key) {
    return l.contains(key) && l[key].is_number_integer() ? l[key].get<int>() : 0;
  };
  ShapedLinks out;
  out.hosts = number("hosts");
  out.ranks_per_host = number("ranks_per_host");
  out.rate = text("rate");
  out.burst = text("burst");
  out.qdisc = text("qdisc");
  if (out.hosts < 1 || out.ranks_per_host < 1)
    throw std::invalid_argument("its provenance's links name no hosts or ranks per host: " +
                                l.dump());
  out.bits_per_second = link_rate_bits(out.rate);
  return out;
}

std::string describe_links(const ShapedLinks& l) {
  return count_of(l.hosts, "host") + " x " + count_of(l.ranks_per_host, "rank") + ", " + l.rate +
         " full duplex per host (" + l.qdisc + ", burst " + l.burst + ")";
}

LinkValidation validate_links(const std::vector<std::string>& databases,
                              const std::vector<std::string>& profile_files,
                              const std::string& suite, int warmup_steps, double target) {
  if (databases.empty()) throw std::invalid_argument("give one or more results databases");
  if (profile_files.empty())
    throw std::invalid_argument(
        "give the profile files `cedar network calibrate --cluster virtual` wrote (--profiles)");
  if (warmup_steps < 0) throw std::invalid_argument("warm-up steps must be 0 or more");
  LinkValidation v;
  v.warmup_steps = warmup_steps;
  v.target = target;
  v.databases = databases;
  for (const auto& file : profile_files)
    for (NetworkProfile& p : load_network_profiles(file)) v.profiles.push_back({file, p});
  for (const auto& db : databases) add_database(v, db, suite);
  // One run of each name, P and rate: two databases holding it would make the crossover ambiguous.
  std::map<std::tuple<std::string, int, std::string>, std::string> seen;
  for (const auto& r : v.rows) {
    auto [it, fresh] =
        seen.emplace(std::make_tuple(r.name, r.world_size, r.links.rate), r.database);
    if (!fresh && it->second != r.database)
      throw std::runtime_error(r.database + ": run '" + r.name + "' at " + r.links.rate +
                               " is also in " + it->second + ": give each rate's runs once");
  }
  std::stable_sort(v.rows.begin(), v.rows.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a.links.bits_per_second, a.links.hosts, a.links.ranks_per_host,
                           a.world_size, a.run_id) <
           std::make_tuple(b.links.bits_per_second, b.links.hosts, b.links.ranks_per_host,
                           b.world_size, b.run_id);
  });
  for (const auto& r : v.rows)
    if (v.rates.empty() || v.rates.back() != r.links.rate) v.rates.push_back(r.links.rate);
  std::vector<double> errors, absolute;
  std::map<std::pair<std::string, std::string>, std::vector<double>> units;  // name, rate
  for (const auto& r : v.rows)
    if (r.world_size == 4 && r.excluded.empty() && r.comm_share() >= 0.5) {
      errors.push_back(r.relative_error());
      absolute.push_back(std::fabs(r.relative_error()));
      units[{r.name, r.links.rate}].push_back(std::fabs(r.relative_error()));
    }
  std::vector<double> unit_medians;
  for (const auto& [unit, values] : units) unit_medians.push_back(median_of(values));
  v.headline_units = static_cast<int>(unit_medians.size());
  v.headline_unit_median = median_of(unit_medians);
  v.headline_unit_interval = median_interval(unit_medians);
  v.headline_runs = static_cast<int>(errors.size());
  v.headline_median_error = median_of(errors);
  v.headline_median_abs_error = median_of(absolute);
  v.headline_interval = median_interval(absolute);
  v.crossovers = link_crossovers(v, suite);
  return v;
}

}  // namespace cedar
