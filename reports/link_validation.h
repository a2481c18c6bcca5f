#pragma once
// The α–β model against seconds measured on shaped links (`cedar network validate`,
// docs/network_validation.md).
//
// Input: results databases whose runs ran on the virtual cluster (network.cluster: virtual; the
// run's provenance names its hosts, ranks per host, rate, burst and qdisc), one database per rate
// (a run's fingerprint holds network.cluster, not the rate), and the network profile files
// `cedar network calibrate --cluster virtual` wrote on those same links. Each run is modeled with
// the profile calibrated on its own links: the same hosts × ranks per host, rate and burst, with
// fits at the run's P (a profile whose measured_on names other links, or that has no fit at P,
// is an error naming the file).
//
// Per run, over its steps after the first `warmup_steps` (step numbers from 0) that moved bytes
// (bus_bytes > 0: local SGD's steps between averages move none), the medians of:
//   measured:  comm_seconds (inside the communicator, rank 0) and compute_seconds;
//   modeled:   each step's own α terms and bus bytes (steps, rank 0) costed with the profile.
// A calibrated profile has α and β per collective and P: a step's terms are costed with the
// run's collectives' fits at P (where a fit has size bands, the band of the collective's mean
// message per call) weighted by each collective's share of the run's α terms and of its bus
// bytes (comm_totals, re-costed at P as reports/projection.h does), which is each
// collective's own fit wherever the run's mix is the same at every step. The levels of a
// hierarchical exchange are costed on their own: "intra" (ranks of one host, shared memory) on
// the run's own profile at the level's ranks where that profile was calibrated at that P on links
// of at least as many ranks per host (calibrate's first P ranks then share one host: the hostfile
// fills a host's slots first), else on the run's recorded intra profile (nominal); the levels
// between hosts on the profile calibrated on the same hosts with one rank per host at the
// level's ranks where one is given, else on the run's own without its fits inside a host. Where
// the database recorded each level's seconds (step_levels.comm_seconds), each level's measured
// and modeled medians are kept beside the run's. A parameter-server run is costed as
// reports/projection.h costs it: per round, 4·W messages and W·(push + pull)/S bytes through the
// servers' links, with the sendrecv fit. Its rows are then left out of the comparison (`excluded`):
// a parameter server's step row records one direction of a round (the push), not the round the
// model costs.
//
// Relative error = (modeled − measured) / measured; communication's share of the step =
// comm / (comm + compute), both medians. The headline: the median |relative error| at P = 4 over
// the runs whose communication is at least half the step, against a target (15%), with a 95%
// distribution-free interval for that median (reports/median_interval.h: the runs taken as
// independent draws of one distribution of errors): the target is met when the interval lies
// within it, missed when it lies above it, undecided when it holds the target. Where runs repeat,
// the same median and interval with each run name and rate as one unit (its runs' median |error|).
//
// When does a method beat dense SGD? Measured: for each run name and P, the mean step
// (comm + compute; over the runs repeated at a rate, the mean of their means) against dense SGD's
// at the same P at each measured rate; the bandwidth where
// the difference changes sign is interpolated linearly in 1/rate between the two measured rates
// around it (the α–β model's step time is linear in 1/rate); where runs repeat and, at either
// rate, the method's and dense SGD's runs overlap, the crossing is marked unresolved. Predicted:
// reports/crossover.h on the runs of one rate alone (α: the profile's allreduce α at P), with
// compute per step the mean after warm-up; its crossover bandwidth is the model's 1/β, turned into
// a link rate by the share of the rate the calibrated allreduce reached on that link (8 /
// (β_allreduce · rate)). No LibTorch here.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/network_model.h"
#include "reports/link_validation_arguments.h"
#include "reports/median_interval.h"

namespace cedar {

// The shaped links a run was measured on (runs.provenance "links", written by `cedar suite` for a
// run on the virtual cluster).
struct ShapedLinks {
  int hosts = 0, ranks_per_host = 0;
  std::string rate, burst, qdisc;
  double bits_per_second = 0;  // the rate
};
// nullopt where the provenance records no links (a run on the machine's own links). Throws
// std::invalid_argument for links without hosts, ranks per host or a readable rate.
std::optional<ShapedLinks> shaped_links_of(const std::string& provenance_json);
// "2 hosts x 1 rank, 100mbit full duplex per host (tbf, burst 256kb)": how `cedar cluster`
// describes its links, and so what `cedar network calibrate --cluster virtual` writes after
// "virtual cluster: " into a profile's measured_on.
std::string describe_links(const ShapedLinks& links);
// True when `p`, calibrated on `links`, has fits at P = `ranks` timed within one host: `ranks` of
// 2 or more and no more than the links' ranks per host (calibrate's first P ranks, or every group
// of P, share a host: the hostfile fills a host's slots first).
bool fitted_within_a_host(const NetworkProfile& p, const ShapedLinks& links, int ranks);
// Bits per second of a tc rate: "100mbit", "1gbit", "1.5gbit", "800kbit", "9600bit". Throws
// std::invalid_argument naming the rate otherwise.
double link_rate_bits(const std::string& rate);

// One profile of a profile file.
struct ProfileSource {
  std::string file;
  NetworkProfile profile;
};

struct LinkValidationRow {
  std::string database, name, algorithm;
  int64_t run_id = 0;
  int world_size = 0, servers = 0;
  ShapedLinks links;
  int profile = -1;  // index in LinkValidation::profiles: the run's own (its links, its P)
  std::string level_profiles;  // levels costed on other profiles: "intra: shm; inter: vc-2x1"
  // Per level, where the database recorded its seconds: medians over the counted steps of rank
  // 0's seconds inside that level's communicators and of the level's modeled seconds.
  struct Level {
    std::string name;
    double measured_comm = 0, modeled_comm = 0;
  };
  std::vector<Level> levels;
  // The profiles (index in LinkValidation::profiles) and P whose fits costed its levels.
  std::vector<std::pair<int, int>> level_fits;
  int steps = 0;  // steps counted (after warm-up, with bytes)
  // Medians over the counted steps, seconds per step.
  double measured_comm = 0, modeled_comm = 0, compute = 0;
  // Means over every step after warm-up, bytes or not (what the crossover compares).
  double mean_step_seconds = 0, mean_compute = 0;
  std::string excluded;  // why it is not compared ("" : compared)
  double relative_error() const { return (modeled_comm - measured_comm) / measured_comm; }
  double comm_share() const { return measured_comm / (measured_comm + compute); }
};

// Where a run beats dense SGD at the same P.
struct LinkCrossover {
  std::string name, algorithm;
  int world_size = 0;
  // wins: "below", "above", "always" (at every rate compared), "never", "" (no dense to compare).
  struct Verdict {
    std::string wins;
    double bits_per_second = 0;      // "below" / "above": the crossover, as a link rate
    std::string between;             // measured: the two rates it lies between ("300mbit-1gbit")
    bool several_crossings = false;  // measured: the sign changed more than once
    // measured: at a rate on either side of the crossing the runs of the method and of dense SGD
    // overlap (neither's every run faster than the other's), so the sign change is within their
    // spread: the crossing is not resolved (false with one run of either: no spread to judge).
    bool within_spread = false;
    // measured, within the spread: the nearest rates below and above the crossing where the runs
    // are apart, the method's on the crossing's two sides ("1gbit and 7gbit"): the crossing lies
    // between them; "" where no such pair was measured (unresolved).
    std::string resolved_between;
    double model_gbps = 0;  // predicted: the α–β model's bandwidth 1/β (Gb/s)
    // predicted: the calibrated allreduce's 8/β over the link's rate; above 1 the fit is faster
    // than the link (seen at P = 4 with 2 ranks per host) and no link rate is given (0).
    double fit_over_rate = 0;
    std::string rate;  // predicted: the rate of the runs it comes from
    int profile = -1;  // predicted: the profile whose α and β it used (LinkValidation::profiles)
  };
  Verdict measured;
  std::vector<Verdict> predicted;  // one per rate with the run and dense at this P
};

struct LinkValidation {
  int warmup_steps = 0;
  double target = 0.15;
  std::vector<std::string> databases;
  std::vector<ProfileSource> profiles;  // every profile of the files given
  std::vector<LinkValidationRow> rows;  // by rate, hosts × ranks, P, run id
  std::vector<LinkCrossover> crossovers;
  std::vector<std::string> rates;  // measured, ascending
  std::vector<std::string> notes;  // runs left out and why (e.g. not on shaped links)
  // The headline: runs at P = 4 compared with communication at least half the step.
  int headline_runs = 0;
  double headline_median_abs_error = 0, headline_median_error = 0;
  // A 95% interval for the median |error| (reports/median_interval.h); none below 6 runs.
  std::optional<MedianInterval> headline_interval;
  // The same with each run name and rate as one unit (the median |error| of its repeated runs):
  // repeated runs of one method on one link are not independent draws of the model's error.
  int headline_units = 0;
  double headline_unit_median = 0;
  std::optional<MedianInterval> headline_unit_interval;
};

// Throws std::runtime_error naming the database or profile file at fault: a database without
// completed runs on shaped links, runs at several rates in one database, a run whose links no
// profile was calibrated on, a profile without fits at the run's P, a file that is not a profile
// file. Runs without shaped links beside shaped ones are left out (named in `excluded`).
LinkValidation validate_links(const std::vector<std::string>& databases,
                              const std::vector<std::string>& profile_files,
                              const std::string& suite, int warmup_steps, double target = 0.15);

// The crossovers of `v`'s rows (the top of this file); the predicted ones read each database's
// runs again (suite as given to validate_links).
std::vector<LinkCrossover> link_crossovers(const LinkValidation& v, const std::string& suite);

// The tables as markdown: each per rate and links, the headline, the crossover.
std::string render_link_validation_markdown(const LinkValidation& v);
// Scatter (modeled against measured, log–log, y = x) and bars (relative error per run and rate)
// as data, gnuplot scripts and (render) SVG and PNG images in `dir`. Returns the image stems
// written ("link_validation_scatter", "link_validation_errors").
std::vector<std::string> write_link_validation_plots(const LinkValidation& v,
                                                     const std::string& dir, bool draw = true);

// docs/network_validation.md: how it was made, the profiles, the tables, the plots (in
// <stem>-plots/ beside `path`) and each database's provenance.
// `shown` is the command as the document names it (its databases, in the order of
// LinkValidation::databases, read from there; its document the one the commands name); the
// profiles' files in `v` are shown as they are.
struct LinkValidationDocument {
  std::string path;               // the markdown written
  LinkValidationArguments shown;  // recorded in the document and shown as its commands
  std::string findings;           // the findings file's text ("" : no such section)
  bool render = true;             // run gnuplot on the plots (else their data and scripts only)
};
void write_link_validation_document(const LinkValidation& v, const LinkValidationDocument& d);

}  // namespace cedar
