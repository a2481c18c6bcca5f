// The tables of `cedar network validate` (reports/link_validation.h).
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "reports/link_validation.h"
#include "reports/number_format.h"

namespace cedar {
namespace {

// Seconds: three significant digits (a run of milliseconds must not read 0.0).
std::string seconds(double s) { return s >= 100 ? fmt("%.0f", s) : fmt("%.3g", s); }
std::string percent(double share) { return fmt("%+.1f%%", 100 * share); }

// "; per level, measured against modeled comm s/step: intra 0.12 against 0.10 (−16.7%), ..."
// where the run recorded each level's seconds; "" otherwise.
std::string level_medians(const LinkValidationRow& r) {
  if (r.levels.empty()) return "";
  std::string s = "; per level, measured on shaped links against modeled comm s/step (medians):";
  for (size_t i = 0; i < r.levels.size(); ++i) {
    const LinkValidationRow::Level& l = r.levels[i];
    s += std::string(i ? "," : "") + " " + l.name + " " + seconds(l.measured_comm) + " against " +
         seconds(l.modeled_comm);
    if (l.measured_comm > 0)
      s += " (" + percent((l.modeled_comm - l.measured_comm) / l.measured_comm) + ")";
  }
  return s;
}

std::string link_rate(double bits) {
  return bits >= 1e9 ? fmt("%.2f Gbit/s", bits / 1e9) : fmt("%.0f Mbit/s", bits / 1e6);
}

const ProfileSource& profile_of(const LinkValidation& v, int index) {
  return v.profiles[static_cast<size_t>(index)];
}

std::string measured_cell(const LinkCrossover::Verdict& m, const std::string& lowest,
                          const std::string& highest) {
  if (m.wins.empty()) return "– (no dense run at the same rates)";
  if (m.wins == "always") return "at every measured rate (" + lowest + " to " + highest + ")";
  if (m.wins == "never") return "at no measured rate (" + lowest + " to " + highest + ")";
  std::string s =
      m.wins + " " + link_rate(m.bits_per_second) + " (interpolated between " + m.between + ")";
  if (m.several_crossings) s += "; the difference changes sign more than once";
  if (m.within_spread && !m.resolved_between.empty())
    s += "; at one of those rates the runs of the method and of dense SGD overlap, so the crossing "
         "is resolved only between " +
         m.resolved_between + " (the nearest rates around it where they are apart)";
  else if (m.within_spread)
    s += "; unresolved: at one of those rates the runs of the method and of dense SGD overlap";
  return s;
}

std::string predicted_cell(const LinkCrossover::Verdict& p) {
  if (p.wins.empty()) return "–";
  if (p.wins == "always") return "at every bandwidth";
  if (p.wins == "never") return "never";
  if (!(p.bits_per_second > 0))
    return p.wins + " the model's " + fmt("%.3g", p.model_gbps) + " Gb/s (the allreduce fit is " +
           fmt("%.2f", p.fit_over_rate) + "x the link's rate: no link rate follows)";
  return p.wins + " " + link_rate(p.bits_per_second) + " (model " + fmt("%.3g", p.model_gbps) +
         " Gb/s)";
}

void render_runs(const LinkValidation& v, std::ostringstream& s) {
  // One table per rate, links and profile, in the rows' order.
  std::map<std::tuple<double, int, int, int>, std::vector<const LinkValidationRow*>> tables;
  std::vector<std::tuple<double, int, int, int>> order;
  for (const auto& r : v.rows) {
    const auto key =
        std::make_tuple(r.links.bits_per_second, r.links.hosts, r.links.ranks_per_host, r.profile);
    if (!tables.count(key)) order.push_back(key);
    tables[key].push_back(&r);
  }
  for (const auto& key : order) {
    const auto& rows = tables[key];
    const LinkValidationRow& first = *rows.front();
    const ProfileSource& p = profile_of(v, first.profile);
    s << "### " << first.links.rate << ", " << first.links.hosts << " x "
      << first.links.ranks_per_host << "\n\n"
      << "Measured on shaped links: " << describe_links(first.links) << ". Modeled (profile "
      << p.profile.name << ", `" << p.file << "`, calibrated on " << p.profile.measured_on
      << ").\n\n"
      << "| run | P | steps | measured on shaped links: comm s/step | modeled (profile "
      << p.profile.name
      << "): comm s/step | (modeled − measured) / measured | compute s/step | comm share |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    std::string notes;
    for (const LinkValidationRow* r : rows) {
      if (!r->excluded.empty()) {
        s << "| " << r->name << " | " << r->world_size << " | " << r->steps
          << " | – | – | – | – | – |\n";
        notes += "- " + r->name + ": not compared: " + r->excluded + "\n";
        continue;
      }
      s << "| " << r->name << " | " << r->world_size << " | " << r->steps << " | "
        << seconds(r->measured_comm) << " | " << seconds(r->modeled_comm) << " | "
        << percent(r->relative_error()) << " | " << seconds(r->compute) << " | "
        << fmt("%.0f%%", 100 * r->comm_share()) << " |\n";
      if (!r->level_profiles.empty())
        notes += "- " + r->name + ": levels modeled on their own profiles (" + r->level_profiles +
                 ")" + level_medians(*r) + "\n";
    }
    if (!notes.empty()) s << "\n" << notes;
    s << "\n";
  }
}

void render_crossovers(const LinkValidation& v, std::ostringstream& s) {
  if (v.crossovers.empty()) return;
  std::map<int, std::vector<const LinkCrossover*>> by_world;
  for (const auto& c : v.crossovers) by_world[c.world_size].push_back(&c);
  const std::string lowest = v.rates.front(), highest = v.rates.back();
  for (const auto& [world, list] : by_world) {
    s << "#### P = " << world << "\n\n| run | measured on shaped links: faster than dense SGD |";
    for (const auto& p : list.front()->predicted) {
      const std::string profile =
          p.profile >= 0 ? profile_of(v, p.profile).profile.name : std::string("none");
      s << " modeled (profile " << profile << ") from the " << p.rate << " runs |";
    }
    s << "\n|---|---|";
    for (size_t i = 0; i < list.front()->predicted.size(); ++i) s << "---|";
    s << "\n";
    for (const LinkCrossover* c : list) {
      s << "| " << c->name << " | " << measured_cell(c->measured, lowest, highest) << " |";
      for (const auto& p : c->predicted) s << " " << predicted_cell(p) << " |";
      s << "\n";
    }
    s << "\n";
  }
}

// The headline's verdict on `target` from the interval of its median (link_validation.h).
const char* verdict(const MedianInterval& i, double target) {
  if (i.high <= target) return "met: the interval lies within the target";
  if (i.low > target) return "missed: the interval lies above the target";
  return "undecided: the interval holds the target";
}

// "1st", "2nd", "3rd", "4th", ...
std::string ordinal(int n) {
  const int tens = n % 100, ones = n % 10;
  const char* suffix = tens >= 11 && tens <= 13 ? "th"
                       : ones == 1              ? "st"
                       : ones == 2              ? "nd"
                       : ones == 3              ? "rd"
                                                : "th";
  return std::to_string(n) + suffix;
}

}  // namespace

std::string render_link_validation_markdown(const LinkValidation& v) {
  std::ostringstream s;
  s << "Seconds per step are medians over each run's steps after its first " << v.warmup_steps
    << " (warm-up) that moved bytes on the link; measured: inside the communicator (rank 0), "
       "modeled: the α–β cost of the same step's collectives on the profile calibrated on the "
       "run's own links. Communication's share of the step: measured comm / (comm + compute).\n\n";
  render_runs(v, s);
  s << "### The model's error at P = 4\n\n";
  if (v.headline_runs == 0) {
    s << "No run at P = 4 spent at least half its step communicating (measured on shaped "
         "links): no median to hold against the "
      << fmt("%.0f%%", 100 * v.target) << " target.\n\n";
  } else {
    const bool met = v.headline_median_abs_error <= v.target;
    s << "Over the " << v.headline_runs
      << " run(s) at P = 4 whose communication is at least half the step (measured on shaped "
         "links), the median |(modeled − measured) / measured| is "
      << fmt("%.1f%%", 100 * v.headline_median_abs_error) << " (signed median "
      << percent(v.headline_median_error)
      << "; modeled on each run's calibrated profile): " << (met ? "within" : "outside") << " the "
      << fmt("%.0f%%", 100 * v.target) << " target.\n\n";
    if (const auto& i = v.headline_interval) {
      s << "A 95% distribution-free interval for that median (the " << ordinal(i->rank)
        << " smallest and largest of the " << v.headline_runs
        << " errors, taken as independent draws of one distribution; coverage "
        << fmt("%.1f%%", 100 * i->coverage) << "): " << fmt("%.1f%%", 100 * i->low) << " to "
        << fmt("%.1f%%", 100 * i->high) << ". The target is " << verdict(*i, v.target) << ".\n\n";
    } else {
      s << "With fewer than 6 such runs no 95% distribution-free interval for the median exists: "
           "the target is neither met nor missed by this measurement.\n\n";
    }
    if (v.headline_units < v.headline_runs) {
      s << "Runs of one method on one link repeat one another rather than the model's error "
           "elsewhere: with each run name and rate as one unit (the median |error| of its runs), "
           "the median over the "
        << v.headline_units << " units is " << fmt("%.1f%%", 100 * v.headline_unit_median);
      if (const auto& i = v.headline_unit_interval) {
        s << ", its 95% distribution-free interval (the " << ordinal(i->rank)
          << " smallest and largest; coverage " << fmt("%.1f%%", 100 * i->coverage) << ") "
          << fmt("%.1f%%", 100 * i->low) << " to " << fmt("%.1f%%", 100 * i->high)
          << ": by units the target is " << verdict(*i, v.target) << ".\n\n";
      } else {
        s << "; with fewer than 6 units no 95% interval exists.\n\n";
      }
    }
  }
  s << "### When does a method beat dense SGD?\n\n"
       "Measured on shaped links: the mean step time (comm + compute, every step after warm-up) "
       "against dense SGD's at the same P at each measured rate ("
    << v.rates.size() << (v.rates.size() == 1 ? " rate" : " rates")
    << "); where the difference changes sign the crossover is interpolated linearly in "
       "1/rate between the two measured rates around it (a rate between them was not "
       "measured). Modeled: `cedar report --crossover`'s α–β sweep on the runs of one rate "
       "alone (compute per step the mean after warm-up, α the profile's allreduce α at P), its "
       "bandwidth 1/β turned into a link rate by the share of the rate the calibrated allreduce "
       "reached on that link. A parameter server's P − 1 workers have no dense run of the same "
       "workers and are left out.\n\n";
  render_crossovers(v, s);
  if (!v.notes.empty()) {
    s << "Left out:\n\n";
    for (const auto& n : v.notes) s << "- " << n << "\n";
    s << "\n";
  }
  return s.str();
}

}  // namespace cedar
