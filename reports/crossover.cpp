#include "reports/crossover.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "reports/gnuplot.h"
#include "reports/number_format.h"
#include "reports/provenance_table.h"

namespace cedar {

const std::vector<double> kCrossoverSweepGbps = {0.1, 0.3, 1, 3, 10, 25, 100, 200, 400};

namespace {

double beta_of(double gbps) { return 8.0 / (gbps * 1e9); }

std::string gbps(double v) {
  return v >= 10 ? fmt("%.0f", v) : v >= 1 ? fmt("%.1f", v) : fmt("%.2g", v);
}

// Seconds or MB: one decimal from 1 on, three significant digits below (a run of milliseconds
// must not read 0.0).
std::string amount(double v) { return v >= 1 || v == 0 ? fmt("%.1f", v) : fmt("%.3g", v); }

// One measured epoch's samples on `workers` ranks in project_point's terms: the fixed part a
// (compute, links inside a host, the network's latency terms), the bytes b on the swept network.
struct EpochTerms {
  double a = 0, b = 0, steps = 0;
};
EpochTerms terms(const RunMeasurement& m, int workers, double alpha, const HostLayout& hosts,
                 const NetworkProfile* intra) {
  const ProjectionPoint pt = project_point(m, workers, NetworkProfile{"", 0, 0}, intra, hosts);
  return {pt.compute_seconds + pt.host_link_seconds + alpha * pt.net_latency_steps,
          pt.net_bus_bytes, pt.steps_per_epoch};
}

// Where the run (a, b) beats dense (ad, bd): its time a + b·β is below ad + bd·β.
void compare(double a, double b, double ad, double bd, CrossoverPoint& pt) {
  const double da = a - ad, db = bd - b;  // the run's extra fixed time, the bytes it saves
  if (da <= 0 && db >= 0)
    pt.wins = "always";
  else if (da >= 0 && db <= 0)
    pt.wins = "never";
  else {
    const double bandwidth = db / da;  // bytes/s where the lines cross (β = da / db)
    pt.crossover_gbps = bandwidth * 8 / 1e9;
    pt.wins = db > 0 ? "below" : "above";
  }
}

// Which seeds each arm's compute time comes from, where any run recorded its hosts' load.
std::string compute_note(const std::vector<CrossoverPoint>& points) {
  std::vector<TimedArm> arms;
  bool recorded = false;
  for (const auto& p : points) {
    if (!p.measured) continue;
    recorded = recorded || p.load_recorded;
    arms.push_back({p.name, p.seeds, p.timed_seeds, p.timed_beside_other_work});
  }
  const std::string note = timing_sources_note("Compute per step is the mean over", arms, recorded);
  return note.empty() ? "" : "\n" + note + "\n";
}

}  // namespace

std::vector<CrossoverPoint> crossover(const std::vector<RunMeasurement>& runs,
                                      const std::vector<int>& workers, double alpha,
                                      const std::vector<NetworkProfile>& profiles,
                                      const NetworkProfile* intra) {
  const std::vector<RunMeasurement> measured = average_seeds(runs);
  std::vector<CrossoverPoint> out;
  for (const auto& m : measured) {
    if (!m.unusable.empty()) continue;
    const RunMeasurement* dense = dense_baseline(measured, m);
    // Dense SGD is costed on the hosts this run was measured on (hierarchical: nodes of R).
    const HostLayout hosts = host_layout_of(m, intra);
    const int own_workers = measured_workers(m);
    std::vector<int> sizes = {own_workers};
    for (int w : workers)
      if (std::find(sizes.begin(), sizes.end(), w) == sizes.end()) sizes.push_back(w);
    for (int w : sizes) {
      const EpochTerms run = terms(m, w, alpha, {}, intra);
      CrossoverPoint pt;
      pt.name = m.name;
      pt.algorithm = m.algorithm;
      pt.workers = w;
      pt.measured = w == own_workers;
      pt.seeds = m.seeds;
      pt.timed_seeds = m.timed_seeds;
      pt.timed_beside_other_work = m.timed_beside_other_work;
      for (const auto& r : runs)
        if (r.name == m.name && r.other_load >= 0) pt.load_recorded = true;
      const double a = run.a, b = run.b;
      pt.fixed_seconds = a;
      pt.bytes_per_epoch = b;
      for (double g : kCrossoverSweepGbps) pt.sweep_seconds.push_back(a + b * beta_of(g));
      for (const auto& p : profiles)
        pt.profile_seconds.push_back(project_point(m, w, p).total_seconds);
      if (dense && dense != &m) {
        pt.has_dense = true;
        const EpochTerms base = terms(*dense, w, alpha, hosts, intra);
        compare(a, b, base.a, base.b, pt);
        const double spread = std::hypot(run.steps * m.compute_seconds_seed_std,
                                         base.steps * dense->compute_seconds_seed_std);
        pt.within_seed_spread = spread > 0 && std::fabs(a - base.a) <= spread;
        for (size_t i = 0; i < profiles.size(); ++i)
          pt.beats_dense_on.push_back(
              pt.profile_seconds[i] <
              project_point(*dense, w, profiles[i], nullptr, hosts).total_seconds);
      }
      out.push_back(pt);
    }
  }
  return out;
}

std::string render_crossover_markdown(const std::vector<CrossoverPoint>& points, double alpha,
                                      const std::vector<NetworkProfile>& profiles) {
  std::ostringstream s;
  s << "Modeled seconds to train one measured epoch's samples (the same samples at every worker "
       "count) over a bandwidth sweep at each run's measured workers, α = "
    << fmt("%g", alpha * 1e6) << " µs per message:\n\n| run | workers |";
  for (double g : kCrossoverSweepGbps) s << " " << gbps(g) << " Gb/s |";
  s << "\n|---|---:|";
  for (size_t i = 0; i < kCrossoverSweepGbps.size(); ++i) s << "---:|";
  s << "\n";
  for (const auto& p : points) {
    if (!p.measured) continue;
    s << "| " << p.name << " | " << p.workers << " |";
    for (double t : p.sweep_seconds) s << " " << amount(t) << " |";
    s << "\n";
  }
  s << "\nAgainst dense SGD at the same workers (weak scaling): the bandwidth below which the run "
       "is "
       "faster for the same samples (α as above), and the profiles on which it is faster:\n\n"
       "| run | workers | fixed s/epoch | bus MB/epoch/rank | beats dense | faster on |\n"
       "|---|---:|---:|---:|---|---|\n";
  for (const auto& p : points) {
    std::string wins = "– (baseline)";
    if (p.has_dense) {
      if (p.wins == "always")
        wins = "at every bandwidth";
      else if (p.wins == "never")
        wins = "never";
      else
        wins = p.wins + " " + gbps(p.crossover_gbps) + " Gb/s";
      if (p.within_seed_spread) wins += " (compute within the seed spread)";
    } else if (p.algorithm != "dense") {
      wins = "– (no dense run)";
    }
    std::string on;
    for (size_t i = 0; i < p.beats_dense_on.size() && i < profiles.size(); ++i)
      if (p.beats_dense_on[i]) on += (on.empty() ? "" : ", ") + profiles[i].name;
    if (p.has_dense && on.empty()) on = "none";
    s << "| " << p.name << " | " << p.workers << (p.measured ? " (measured)" : "") << " | "
      << amount(p.fixed_seconds) << " | " << amount(p.bytes_per_epoch / 1e6) << " | " << wins
      << " | " << (on.empty() ? "–" : on) << " |\n";
  }
  s << "\nProfiles: ";
  for (size_t i = 0; i < profiles.size(); ++i)
    s << (i ? ", " : "") << profiles[i].name << " (α " << fmt("%g", profiles[i].alpha * 1e6)
      << " µs, " << gbps(8.0 / profiles[i].beta / 1e9) << " Gb/s, " << profiles[i].provenance()
      << (profiles[i].collectives.empty() ? "" : ", each collective costed with its own fit")
      << ")";
  s << ". Fixed time: measured compute per step (forward, backward, compression, optimizer), "
       "the links inside a host and the network's latency terms; bytes: what each rank pushes "
       "through the network (the swept link), the run's own collective mix re-costed at each "
       "worker count. Workers of a parameter server exclude its servers. Dense SGD is costed on "
       "the hosts the run was measured on: for a two-level run, nodes of its intra group size, "
       "a flat ring crossing each node's network link once.\n";
  s << compute_note(points);
  return s.str();
}

std::vector<std::string> write_crossover_plot(const std::vector<CrossoverPoint>& points,
                                              const std::string& dir, bool render) {
  std::filesystem::create_directories(dir + "/data");
  std::ofstream data(dir + "/data/crossover.tsv");
  data << "# gbps";
  std::vector<const CrossoverPoint*> shown;
  for (const auto& p : points)
    if (p.measured) {
      shown.push_back(&p);
      data << "\t" << p.name;
    }
  if (shown.empty()) throw std::runtime_error("crossover plot: no run to plot");
  data << "\n";
  for (size_t i = 0; i < kCrossoverSweepGbps.size(); ++i) {
    data << kCrossoverSweepGbps[i];
    for (const auto* p : shown) data << "\t" << p->sweep_seconds[i];
    data << "\n";
  }
  data.close();
  std::ofstream gp(dir + "/crossover.gp");
  gp << "# crossover: modeled time per measured epoch's samples against bandwidth (generated by "
        "cedar report "
        "--crossover)\n"
        "set datafile separator '\\t'\nset key outside right\nset grid\nset logscale xy\n"
        "set xlabel 'bandwidth (Gb/s)'\nset ylabel 'modeled time per measured epoch (s)'\n"
        "set title 'When does compression help? (alpha-beta model, measured compute)'\n"
        "set terminal svg size 900,500 dynamic noenhanced\nset output 'crossover.svg'\nplot ";
  for (size_t i = 0; i < shown.size(); ++i)
    gp << "'data/crossover.tsv' using 1:" << i + 2 << " with linespoints pt 7 ps 0.5 lc "
       << i % 8 + 1 << " dt " << i / 8 + 1 << " title '" << shown[i]->name << "'"
       << (i + 1 < shown.size() ? ", " : "\n");
  gp << "set terminal pngcairo size 900,500 noenhanced\nset output 'crossover.png'\nreplot\n";
  gp.close();
  if (!render) return {};
  render_gnuplot(dir, "crossover.gp");
  return {dir + "/crossover.svg", dir + "/crossover.png"};
}

}  // namespace cedar
