#pragma once
// Time to train one measured epoch's samples, projected to more workers from what a run measured
// (`cedar project`).
//
// Weak scaling, as data-parallel training is run: the batch per rank stays fixed, so the N samples
// the measured epoch trained (its steps × P0 × batch) take N / (P · batch) = steps · P0 / P steps
// on P workers. That count is kept fractional: every projected time is for the same N samples at
// every P, never for fewer (a rounded-down count would drop up to one global batch of work). The
// compute time of a step (forward, backward, compression, optimizer: rank 0's mean) stays what it
// was at the measured P0.
//
// Communication per step comes from the collectives the run really made: comm_totals holds, per
// rank and collective kind, the calls and payload bytes over the whole run, so dividing by the
// steps gives the per-step mix (e.g. DGC: 1 allgatherv of ~70 kB plus 1 allreduce of the dense
// vectors). Each kind is then re-costed on P workers with the α–β model and the bus-byte rules of
// comm/network_model.h and bus_bytes.h, exactly as the metering layer costs it at P0:
//   allreduce of S bytes:       2(P-1) α + 2(P-1)/P · S β   — per-rank bytes bounded by 2S
//   allgather of s bytes/rank:  (P-1) α + (P-1) · s β       — grows linearly with P
//   allgatherv:                 twice the latency (counts, then data), the bytes of an allgather
//   broadcast of S bytes:       ceil(log2 P) α + S β
// An allreduce is costed as the scheme the run used (network.allreduce, from its configuration;
// comm/network_model.h): the library's and ring as above, halving_doubling, tree, and on each
// level of a two_level run its own (tree inside a node, ring between nodes).
// That is why sparse and quantized schemes that allgather lose their advantage over a dense
// allreduce as P grows. Runs measured on one rank record no bytes (a lone rank sends nothing),
// so they cannot be projected. comm_totals are run totals, so the mix is the run's average:
// phases such as DGC's sparsity warm-up or post-local SGD's dense epochs weigh in at their share
// of the steps. Forming sub-communicators (split) happens once before training and is left out.
//
// A calibrated profile (`cedar network calibrate`) costs each kind with the α and β fitted for
// that collective at the nearest P it was measured on (sends with its sendrecv fit); a nominal
// profile, or a kind the calibration left out (barrier), with the profile's one α and β.
//
// Hosts. P ranks sit on hosts of R ranks each (R = 1 unless given): the ranks of a host talk
// over the host's own link (an intra-node profile such as shm), hosts over the network. A flat
// ring ordered by host crosses each host's network link once in each direction, and every ring
// round waits for its slowest edge, so on two or more hosts a flat collective costs what it costs
// on the network; on one host (P ≤ R) it runs entirely on the host's link. Runs whose exchange
// has levels (hierarchical: comm_totals ops "intra/<op>" and "inter/<op>", step_levels rows) are
// costed level by level: the level "intra" keeps its measured group size (the ranks of a node do
// not change with P) and its profile (network.intra_profile as the run recorded it, or the one
// given), every other level grows with P (N = measured size · P / P0 node leaders, at least 1) on
// the projection's network. A level's mix is per rank taking part in it (the leaders, between
// nodes); its payload weighs in by the share of ranks taking part. Dense SGD compared with such a
// run is costed on the same hosts: R = the run's intra group size.
//
// Parameter-server runs (runs.servers > 0) are costed on the servers' links instead, where every
// push and pull concentrates: P is then the number of workers, the S servers stay as measured.
// An epoch is G gradients (G = samples / batch per worker, whatever P), each pushed in 2 messages
// (header, gradient) of `push` bytes in all, 1/S of them to each server, and answered by each
// server with 2 messages (header, the shard's parameters) of `pull` bytes in all. So each
// server's link receives 2G messages and G·push/S bytes per epoch and sends as many messages and
// G·pull/S bytes. Under bsp a server replies only when a round's last push has arrived, so the
// two directions take turns: α·4G + β·G·(push + pull)/S. Under ssp and asp the pushes of some
// workers and the replies to others share the full-duplex link at once: α·2G + β·G·max(push,
// pull)/S. Either way the communication per epoch is the same at every P, while the compute per
// epoch (G/P gradients in parallel) shrinks: the parameter server's bottleneck the surveys
// describe.
// No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/network_model.h"

namespace cedar {

// One collective kind as a run used it, per training step (run totals / steps).
struct CollectiveMix {
  std::string op;            // allreduce, allgather, allgatherv, broadcast, barrier, send, ...
  double calls = 0;          // per step
  double payload_bytes = 0;  // per step, what one rank contributes (mean over ranks)
  double bus_bytes = 0;      // per step, rank 0 (used for broadcast, whose payload is the root's)
  double share = 1;          // the fraction of the ranks that made it (levels: e.g. the leaders)
};

// One level of sub-communicators as a run used it (step_levels and comm_totals "<level>/<op>").
struct LevelMix {
  std::string name;                        // "intra", "inter"
  std::string profile;                     // the network profile the run modeled it on
  int ranks = 0;                           // rank 0's communicator size at this level, as measured
  std::vector<CollectiveMix> collectives;  // per step and rank taking part
};

// What one run (or the mean of a run name's seeds) measured.
struct RunMeasurement {
  int64_t id = 0;
  std::string suite, name, algorithm, model, dataset, status;
  int64_t world_size = 1, seed = 0;
  int seeds = 1;                        // runs averaged into this one
  int64_t steps = 0;                    // steps recorded
  int64_t steps_per_epoch = 0;          // steps of its longest epoch
  double compute_seconds_per_step = 0;  // rank 0, mean over steps
  double compute_seconds_seed_std = 0;  // standard deviation of the above over seeds (0: one seed)
  // The largest share of its hosts' CPU other processes used while it trained (< 0: not
  // recorded; reports/provenance_table.h). Seeds averaged: compute per step and its spread come
  // from the `timed_seeds` timed on a quiet host where there are any, else from all `seeds`, and
  // `timed_beside_other_work` says so.
  double other_load = -1;
  int timed_seeds = 1;
  bool timed_beside_other_work = false;
  double dense_payload_bytes = 0;  // per step: a dense fp32 allreduce's payload (dense_bytes)
  std::vector<CollectiveMix> collectives;  // on the run's own communicator
  std::vector<LevelMix> levels;            // on sub-communicators (empty: a flat exchange)
  AllreduceScheme allreduce = AllreduceScheme::library;  // network.allreduce of the run
  // Per step, rank 0, as the steps table recorded them (α terms and bus bytes): the mix above
  // reproduces them at world_size, which `cedar project` checks and reports.
  double recorded_latency_steps = 0, recorded_bus_bytes = 0;
  std::string unusable;  // why it cannot be projected (empty: it can)
  // Parameter-server runs: the server ranks (0: not one), the gradients of an epoch (all workers
  // together) and the bytes one gradient's pushes took (headers included, LAG's skips averaged in).
  int64_t servers = 0;
  double gradients_per_epoch = 0, push_bytes_per_gradient = 0;
  // The bytes the servers sent per gradient they answered (headers included: the replies).
  double pull_bytes_per_gradient = 0;
  bool synchronous = true;  // bsp (replies after each round), not ssp or asp
};

// The α and β terms of one step's collectives on `workers` ranks.
struct CollectiveCost {
  double latency_steps = 0;
  double bus_bytes = 0;
};
// Throws std::runtime_error for a collective kind without a cost rule. `allreduce`: the scheme
// its allreduces ran (two_level: as ring; its levels are costed with allreduce_scheme_for_level).
CollectiveCost collective_cost(const CollectiveMix& mix, int workers,
                               AllreduceScheme allreduce = AllreduceScheme::library);
// A call's mean message as `cedar network calibrate` sizes it (S; s per rank for allgather[v];
// the root's bytes for broadcast): what picks a size band of a calibrated fit (network_model.h).
double mean_message_bytes(const CollectiveMix& mix);
// Every collective of a step: the run's own and each level's (levels_at sizes).
CollectiveCost step_cost(const RunMeasurement& m, int workers);
// A level's cost per step on `workers` ranks of the whole run, and its group size there.
CollectiveCost level_cost(const RunMeasurement& m, const LevelMix& level, int workers);
int level_ranks_at(const RunMeasurement& m, const LevelMix& level, int workers);

// One level of a projected step.
struct LevelPoint {
  std::string name, profile;
  int ranks = 0;            // group size at this P
  double bus_mb = 0;        // bus bytes rank 0 pushes per step at this level (MB = 1e6 bytes)
  double comm_seconds = 0;  // per epoch, on the level's profile
};

struct ProjectionPoint {
  int workers = 1;
  bool measured = false;  // the run's own world size
  // Steps that train the measured epoch's samples at this P: measured steps · P0 / P, fractional.
  double steps_per_epoch = 0;
  double compute_seconds = 0, comm_seconds = 0, total_seconds = 0;  // per measured epoch
  // comm_seconds split by link, per measured epoch: the α and β terms on the projection's network
  // (net.seconds of them) and the seconds on links of a host (intra levels; one-host runs).
  double net_latency_steps = 0, net_bus_bytes = 0, host_link_seconds = 0;
  // Bus bytes each rank pushes per step, by collective family (MB = 1e6 bytes).
  double allreduce_mb = 0, allgather_mb = 0, broadcast_mb = 0;
  // Per step at this P, as defined in reports/byte_ratios.h (payload compression does not
  // depend on P).
  double payload_compression = 0, wire_ratio = 0;
  double speedup_vs_measured = 0;  // this run's epoch time at its measured P0 / at this P
  double speedup_vs_dense = 0;  // dense epoch time / this run's, both at this P (0: no dense run)
  std::vector<LevelPoint> levels;  // the levels' part of comm_seconds (runs with levels)
};

struct Projection {
  RunMeasurement basis;                 // seeds averaged
  std::string network;                  // profile name
  NetworkProfile profile;               // the profile itself (a calibrated one: its fits)
  std::string dense_name;               // the baseline of speedup_vs_dense (empty: none)
  std::vector<ProjectionPoint> points;  // the measured world size first, then `workers`
};

// Completed runs of `suite` (all suites when empty; the latest run of each name, seed and world
// size, as in the comparison table), or only the run `run_id` (> 0) whatever its status.
std::vector<RunMeasurement> load_measurements(const std::string& db_path, const std::string& suite,
                                              int64_t run_id = 0);
// Seeds of one name averaged (same name, model, dataset and world size).
std::vector<RunMeasurement> average_seeds(const std::vector<RunMeasurement>& runs);

// The dense run of the same model and dataset among `baselines`, preferring the same suite, then
// the run named "dense" (a suite may have several dense-algorithm runs), then the measured world
// size (nullptr: none).
const RunMeasurement* dense_baseline(const std::vector<RunMeasurement>& baselines,
                                     const RunMeasurement& m);

// The measured point's P: the world size, or a parameter server's workers.
int measured_workers(const RunMeasurement& m);

// Where the ranks sit: hosts of `ranks_per_host` ranks whose links inside a host are `intra`
// (nullptr: the run's recorded intra profile, else shm).
struct HostLayout {
  int ranks_per_host = 1;
  const NetworkProfile* intra = nullptr;
};
// The hosts a run with levels was measured on (R = its intra group size, its intra profile, or
// `intra` when given); one rank per host for a flat run.
HostLayout host_layout_of(const RunMeasurement& m, const NetworkProfile* intra = nullptr);

// `intra`: the profile of level "intra" (nullptr: the one the run recorded). A parameter-server
// run is costed on its servers' links (see the top of this file), `workers` its workers. `hosts`
// places a flat run's ranks (default: one per host, every collective on `net`).
ProjectionPoint project_point(const RunMeasurement& m, int workers, const NetworkProfile& net,
                              const NetworkProfile* intra = nullptr, const HostLayout& hosts = {});
// One projection per usable subject; the dense baseline (same model and dataset, preferably the
// same suite and measured world size) is taken from `baselines`.
std::vector<Projection> project_runs(const std::vector<RunMeasurement>& subjects,
                                     const std::vector<RunMeasurement>& baselines,
                                     const std::vector<int>& workers, const NetworkProfile& net,
                                     const NetworkProfile* intra = nullptr);

std::string render_projection_markdown(const std::vector<Projection>& projections);
std::string render_projection_csv(const std::vector<Projection>& projections);

}  // namespace cedar
