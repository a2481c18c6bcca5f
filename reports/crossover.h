#pragma once
// When does compression help? For each run, from what it measured — compute time per step
// (forward, backward, compression, optimizer) and the per-step mix of its collectives — the α–β
// model (reports/projection.h) gives the time to train one measured epoch's samples on P workers
// at any bandwidth (the same samples at every P):
//   t(β) = a + b·β,   a = compute + host links + steps·L·α,   b = steps·B
// (L latency steps and B bus bytes on the network; links inside a host are not swept).
// Against dense SGD at the same P, a run with fewer bytes (b < b_dense) but more fixed time
// (a > a_dense) wins below the crossover bandwidth (b_dense − b) / (a − a_dense) bytes/s; with
// no more fixed time it wins at every bandwidth, and with more bytes and more fixed time never.
// α is held at one profile's latency while the bandwidth sweeps (Agarwal et al., MLSys 2022, ask
// the same question of measured systems). No LibTorch here.
#include <string>
#include <vector>

#include "comm/network_model.h"
#include "reports/projection.h"

namespace cedar {

// The bandwidths of the sweep, Gb/s (10^9 bits per second).
extern const std::vector<double> kCrossoverSweepGbps;

struct CrossoverPoint {
  std::string name, algorithm;
  int workers = 1;
  bool measured = false;       // the run's own world size
  double fixed_seconds = 0;    // a: compute, host links and latency terms, per measured epoch
  double bytes_per_epoch = 0;  // b: bus bytes per rank on the network, per measured epoch
  std::vector<double> sweep_seconds;    // per epoch at each kCrossoverSweepGbps
  std::vector<double> profile_seconds;  // per epoch on each profile given
  // Against dense SGD at the same workers (has_dense false: no dense run of this model/data).
  bool has_dense = false;
  std::string wins;                  // "below", "above", "always", "never", or "" for dense itself
  double crossover_gbps = 0;         // for "below" / "above"
  std::vector<bool> beats_dense_on;  // per profile given
  // The fixed-time difference to dense is within the seeds' spread of compute time (one seed
  // spread of the difference), so "always" / "never" / the crossover rest on noise.
  bool within_seed_spread = false;
  // The seeds of the run and those its compute time comes from (RunMeasurement::timed_seeds);
  // load_recorded: any of them recorded its hosts' load.
  int seeds = 1, timed_seeds = 1;
  bool timed_beside_other_work = false, load_recorded = false;
};

// Every usable measurement (seeds averaged) at its own workers (a parameter server's exclude its
// servers) and at each of `workers`. `intra`: the links inside a host, for the levels of a
// hierarchical exchange and dense SGD on its hosts (nullptr: each run's recorded intra_profile).
std::vector<CrossoverPoint> crossover(const std::vector<RunMeasurement>& runs,
                                      const std::vector<int>& workers, double alpha,
                                      const std::vector<NetworkProfile>& profiles,
                                      const NetworkProfile* intra = nullptr);

std::string render_crossover_markdown(const std::vector<CrossoverPoint>& points, double alpha,
                                      const std::vector<NetworkProfile>& profiles);
// The sweep at each run's measured world size as data, a gnuplot script and (render) SVG and PNG
// images named crossover.* in `dir`. Returns the image paths.
std::vector<std::string> write_crossover_plot(const std::vector<CrossoverPoint>& points,
                                              const std::string& dir, bool render = true);

}  // namespace cedar
