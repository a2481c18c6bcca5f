// The projection's tables: markdown and CSV (reports/projection.h).
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "comm/network_model.h"
#include "reports/number_format.h"
#include "reports/projection.h"

namespace cedar {
namespace {

bool uses(const Projection& p, const char* family) {
  auto in = [&](const std::vector<CollectiveMix>& mix) {
    for (const auto& c : mix) {
      std::string f = c.op == "allgatherv" ? "allgather" : c.op;
      if (f == family) return true;
    }
    return false;
  };
  if (in(p.basis.collectives)) return true;
  for (const auto& l : p.basis.levels)
    if (in(l.collectives)) return true;
  return false;
}

// A calibrated profile's fits, one line per collective (nothing for a nominal profile).
std::string calibrated_fits(const NetworkProfile& net) {
  if (net.collectives.empty()) return "";
  std::string out =
      "Each collective is costed with its own fit at the nearest P measured (α µs, Gb/s per bus "
      "byte rate); others with the α and β above:";
  for (const auto& [op, fits] : net.collectives) {
    out += "\n- " + op + ":";
    for (const auto& [world, f] : fits)
      out += " P = " + std::to_string(world) + ": " + fmt("%g", f.alpha * 1e6) + " µs, " +
             (f.beta > 0 ? fmt("%g", 8e-9 / f.beta) : std::string("∞")) + " Gb/s;";
    out.pop_back();
  }
  return out + "\n\n";
}

std::string ratio(double v) { return v > 0 ? fmt("%.2f×", v) : "–"; }

std::string secs(double v) { return fmt("%.6f", v); }
}  // namespace

std::string render_projection_markdown(const std::vector<Projection>& projections) {
  std::ostringstream s;
  if (projections.empty()) return "";
  const NetworkProfile& net = projections[0].profile;
  s << "# Projected time to train one measured epoch's samples on " << net.name
    << " (α = " << fmt("%g", net.alpha * 1e6) << " µs, " << fmt("%g", 8e-9 / net.beta) << " Gb/s, "
    << net.provenance() << "; modeled seconds from this profile, compute measured)\n\n"
    << calibrated_fits(net)
    << "Every row is the same N samples: those of the measured epoch (its steps × P0 ranks × the "
       "batch per rank). Fixed batch per rank, so steps = measured steps × P0 / P, kept "
       "fractional. Compute per step as measured at P0; communication: the α–β cost of the "
       "collectives each step made (comm_totals), re-costed on P ranks. MB columns: bus bytes each "
       "rank pushes per step. Payload compression: dense fp32 payload ÷ the run's payload; wire "
       "ratio: dense SGD's bus bytes (ring allreduce) ÷ the run's, both at P.\n";
  for (const auto& p : projections) {
    const RunMeasurement& m = p.basis;
    s << "\n## " << m.name << " — " << m.algorithm << ", " << m.model << ", " << m.dataset
      << " (suite " << (m.suite.empty() ? "–" : m.suite) << "), measured on " << m.world_size
      << " ranks, " << m.seeds << (m.seeds == 1 ? " seed" : " seeds") << "\n\n";
    if (m.servers > 0)
      s << "Parameter server: " << m.servers << " server(s) and " << measured_workers(m)
        << " workers measured (" << (m.synchronous ? "bsp" : "ssp/asp")
        << "); P below counts workers. Per epoch " << fmt("%.0f", m.gradients_per_epoch)
        << " gradients G, each pushed as " << fmt("%.4f", m.push_bytes_per_gradient / 1e6)
        << " MB and answered with " << fmt("%.4f", m.pull_bytes_per_gradient / 1e6)
        << " MB (headers included), all through the servers' links: "
        << (m.synchronous ? "α·4G + β·G·(push + pull)/S (the replies follow each round)"
                          : "α·2G + β·G·max(push, pull)/S (both directions at once)")
        << " per epoch at every P.\n\n";
    s << "Per step at " << m.world_size << " ranks: compute "
      << fmt("%.2f", 1e3 * m.compute_seconds_per_step) << " ms";
    for (const auto& c : m.collectives)
      s << "; " << c.op << " " << fmt("%.2f", c.calls) << " call(s), "
        << fmt("%.4f", c.payload_bytes / 1e6) << " MB/rank";
    const CollectiveCost own = step_cost(m, static_cast<int>(m.world_size));
    s << ". α–β terms per step from this mix: " << fmt("%.2f", own.latency_steps) << " latencies, "
      << fmt("%.4f", own.bus_bytes / 1e6)
      << " bus MB (steps table: " << fmt("%.2f", m.recorded_latency_steps) << ", "
      << fmt("%.4f", m.recorded_bus_bytes / 1e6) << ").\n\n";
    if (m.allreduce != AllreduceScheme::library)
      s << "Allreduce scheme " << allreduce_scheme_name(m.allreduce)
        << " (network.allreduce): costed on its critical path (comm/network_model.h); the steps "
           "table counts the messages rank 0 itself sent.\n\n";
    for (const auto& l : m.levels) {
      s << "Level " << l.name << " (" << l.ranks << " ranks per group at " << m.world_size
        << " ranks, recorded on " << l.profile << "), per rank taking part:";
      for (const auto& c : l.collectives)
        s << " " << c.op << " " << fmt("%.2f", c.calls) << " call(s), "
          << fmt("%.4f", c.payload_bytes / 1e6) << " MB (" << fmt("%.0f", 100 * c.share)
          << "% of ranks);";
      s << "\n";
    }
    if (!m.levels.empty())
      s << "\nEach level is costed on its own profile: intra keeps its group size, the others "
           "grow with P.\n\n";
    const bool ar = uses(p, "allreduce"), ag = uses(p, "allgather"), bc = uses(p, "broadcast");
    s << "| workers | steps | compute s | comm s | total s |";
    if (ar) s << " allreduce MB/step |";
    if (ag) s << " allgather MB/step |";
    if (bc) s << " broadcast MB/step |";
    for (const auto& l : m.levels)
      s << " " << l.name << " ranks | " << l.name << " MB/step | " << l.name << " s/epoch |";
    s << " payload compression | wire ratio | speed-up vs " << m.world_size << " ranks | vs dense"
      << (p.dense_name.empty() ? "" : " (" + p.dense_name + ")") << " |\n";
    s << "|---:|---:|---:|---:|---:|" << (ar ? "---:|" : "") << (ag ? "---:|" : "")
      << (bc ? "---:|" : "");
    for (size_t i = 0; i < m.levels.size(); ++i) s << "---:|---:|---:|";
    s << "---:|---:|---:|---:|\n";
    for (const auto& pt : p.points) {
      auto secs = [&](double v) { return fmt("%.3f", v); };
      s << "| " << pt.workers << (pt.measured ? " (measured)" : "") << " | "
        << fmt("%.2f", pt.steps_per_epoch) << " | " << secs(pt.compute_seconds) << " | "
        << secs(pt.comm_seconds) << " | " << secs(pt.total_seconds) << " |";
      if (ar) s << " " << fmt("%.4f", pt.allreduce_mb) << " |";
      if (ag) s << " " << fmt("%.4f", pt.allgather_mb) << " |";
      if (bc) s << " " << fmt("%.4f", pt.broadcast_mb) << " |";
      for (const auto& l : pt.levels)
        s << " " << l.ranks << " | " << fmt("%.4f", l.bus_mb) << " | " << secs(l.comm_seconds)
          << " |";
      s << " " << ratio(pt.payload_compression) << " | " << ratio(pt.wire_ratio) << " | "
        << ratio(pt.speedup_vs_measured) << " | " << ratio(pt.speedup_vs_dense) << " |\n";
    }
  }
  return s.str();
}

std::string render_projection_csv(const std::vector<Projection>& projections) {
  std::ostringstream s;
  s << "run,algorithm,model,dataset,suite,measured_ranks,seeds,network,workers,measured,"
       "steps_per_measured_epoch,compute_s_per_measured_epoch,comm_s_per_measured_epoch,"
       "total_s_per_measured_epoch,"
       "allreduce_mb_per_step,allgather_mb_per_step,broadcast_mb_per_step,speedup_vs_measured,"
       "speedup_vs_dense,dense_run,payload_compression,wire_ratio\n";
  for (const auto& p : projections) {
    const RunMeasurement& m = p.basis;
    for (const auto& pt : p.points)
      s << m.name << "," << m.algorithm << "," << m.model << "," << m.dataset << "," << m.suite
        << "," << m.world_size << "," << m.seeds << "," << p.network << "," << pt.workers << ","
        << (pt.measured ? 1 : 0) << "," << fmt("%.6f", pt.steps_per_epoch) << ","
        << secs(pt.compute_seconds) << "," << secs(pt.comm_seconds) << "," << secs(pt.total_seconds)
        << "," << fmt("%.6f", pt.allreduce_mb) << "," << fmt("%.6f", pt.allgather_mb) << ","
        << fmt("%.6f", pt.broadcast_mb) << ","
        << (pt.speedup_vs_measured > 0 ? fmt("%.4f", pt.speedup_vs_measured) : "") << ","
        << (pt.speedup_vs_dense > 0 ? fmt("%.4f", pt.speedup_vs_dense) : "") << "," << p.dense_name
        << "," << (pt.payload_compression > 0 ? fmt("%.4f", pt.payload_compression) : "") << ","
        << (pt.wire_ratio > 0 ? fmt("%.4f", pt.wire_ratio) : "") << "\n";
  }
  return s.str();
}
}  // namespace cedar
