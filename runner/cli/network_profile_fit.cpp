#include "runner/cli/network_profile_fit.h"

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "comm/bus_bytes.h"
#include "comm/network_profile_file.h"

namespace cedar {
namespace {

// What was measured, before any fit: the median seconds per call of each collective, P and size,
// and the rate its bus bytes (nccl-tests' factors, comm/bus_bytes.h) went through a rank's link.
void print_timings(const std::vector<CollectiveTiming>& timings) {
  std::printf(
      "| collective | P | bytes | calls per loop | median s per call | bus Mbit/s |\n"
      "|---|---:|---:|---:|---:|---:|\n");
  for (const CollectiveTiming& t : timings) {
    const auto bytes = static_cast<int64_t>(t.bytes);
    const int64_t bus = t.op == "allreduce" ? allreduce_bus_bytes(bytes, t.world)
                        : t.op == "allgather" || t.op == "allgatherv"
                            ? allgather_bus_bytes(bytes * t.world, t.world)
                            : bytes;  // broadcast; sendrecv: each rank sends S to the next
    std::printf("| %s | %d | %lld | %d | %.6g | %.1f |\n", t.op.c_str(), t.world,
                static_cast<long long>(bytes), t.calls, t.seconds, bus * 8 / t.seconds / 1e6);
  }
  std::printf("\n");
}

}  // namespace

// The profile's fits as a markdown table (a calibrated one), then its defaults.
void print_fits(const NetworkProfile& p) {
  if (!p.collectives.empty()) {
    std::printf("| collective | P | alpha µs | beta ns/B | Gb/s |\n|---|---:|---:|---:|---:|\n");
    for (const auto& [op, fits] : p.collectives)
      for (const auto& [world, f] : fits)
        std::printf("| %s | %d | %.3f | %.4f | %.3f |\n", op.c_str(), world, f.alpha * 1e6,
                    f.beta * 1e9, f.beta > 0 ? 8e-9 / f.beta : 0.0);
    std::printf("\n");
  }
  if (!p.size_bands.empty()) {
    std::printf(
        "Size bands (a message is costed on the band that holds it):\n\n"
        "| collective | P | message bytes | alpha µs | beta ns/B | Gb/s |\n"
        "|---|---:|---|---:|---:|---:|\n");
    for (const auto& [op, worlds] : p.size_bands)
      for (const auto& [world, bands] : worlds)
        for (size_t i = 0; i < bands.size(); ++i) {
          const AlphaBeta& f = bands[i].fit;
          const std::string range =
              std::to_string(static_cast<int64_t>(bands[i].from_bytes)) +
              (i + 1 < bands.size()
                   ? " to below " + std::to_string(static_cast<int64_t>(bands[i + 1].from_bytes))
                   : std::string(" and up"));
          std::printf("| %s | %d | %s | %.3f | %.4f | %.3f |\n", op.c_str(), world, range.c_str(),
                      f.alpha * 1e6, f.beta * 1e9, f.beta > 0 ? 8e-9 / f.beta : 0.0);
        }
    std::printf("\n");
  }
  std::printf("%s: alpha %.3f µs, beta %.4f ns/B (%.3f Gb/s)\n",
              p.collectives.empty() ? "every op" : "any other op", p.alpha * 1e6, p.beta * 1e9,
              8e-9 / p.beta);
}

void fit_and_write_profile(const std::vector<CollectiveTiming>& timings, const std::string& name,
                           const std::string& measured_on, const std::string& out,
                           const char* command, const std::vector<double>& band_edges) {
  write_fitted_profile(fit_network_profile(timings, name, measured_on, band_edges), timings, out,
                       command);
}

void write_fitted_profile(const NetworkProfile& p, const std::vector<CollectiveTiming>& timings,
                          const std::string& out, const char* command) {
  if (!(p.beta > 0))
    throw std::runtime_error(
        "the allreduce fit has no bandwidth term (beta = 0): its times hardly grow with size; "
        "widen --sizes or time on an idle machine");
  for (const auto& [op, fits] : p.collectives)
    for (const auto& [world, f] : fits)
      if (!(f.alpha > 0) || !(f.beta > 0))
        std::fprintf(stderr,
                     "cedar network %s: warning: %s at P = %d: %s is 0 (the free fit was "
                     "negative): the times hardly grow with size; widen --sizes or calibrate on "
                     "an idle machine\n",
                     command, op.c_str(), world, f.beta > 0 ? "alpha" : "beta");
  for (const auto& [op, worlds] : p.size_bands)
    for (const auto& [world, bands] : worlds)
      for (const SizeBand& b : bands)
        if (!(b.fit.beta > 0))
          std::fprintf(stderr,
                       "cedar network %s: warning: %s at P = %d, the band from %.0f bytes: beta is "
                       "0 (the free fit was negative): that band is priced by its latency alone\n",
                       command, op.c_str(), world, b.from_bytes);
  write_network_profiles(out, {p});
  load_network_profiles(out);  // what was written reads back
  std::printf("network profile '%s' (%s) written to %s\n\n", p.name.c_str(), p.provenance().c_str(),
              out.c_str());
  print_timings(timings);
  print_fits(p);
}

}  // namespace cedar
