// The alpha-beta check behind `comm_bench --fit` (see alpha_beta_fit.h).
//
// What is measured: raw MPI_Allreduce (fp32 sum, in place), MPI_Allgather and MPI_Bcast (root 0)
// on MPI_COMM_WORLD, no Cedar layer in between. Per size: `warmup` untimed calls, a barrier, then
// `iters` calls timed back to back; the time per call is the slowest rank's (a collective is done
// when its last rank is), and the median over `reps` such loops is kept. `iters` is set once per
// size in the first round from a short probe so that a loop lasts about `loop_seconds` (3 to 1000
// calls), as a count fixed in advance makes the run's length grow with the machine's load. Each
// of the `reps` rounds times every size once (alternating direction), so a change of the load
// during the run spreads over all sizes instead of landing on one collective.
//
// What is fitted (comm/alpha_beta_least_squares.h, shared with `cedar network calibrate`): alpha
// and beta minimising the sum of squared relative errors ((L*alpha + B*beta - t) / t)^2 over the
// allreduce sizes at even positions of the sweep only (4 KiB, 16 KiB, ... by default), with L =
// 2(P-1) and B = 2(P-1)/P * S from the model. Every other number in the table is a prediction from
// that fit, none uses its own timings.
//
// The model describes a ring network of P links. Loopback MPI is not one: ranks exchange data
// through shared memory on one host, and the MPI library picks its own algorithm per size, so
// this measures how far the model carries on this machine, not a property of a cluster.
#include "bench/alpha_beta_fit.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "comm/alpha_beta_least_squares.h"
#include "comm/bus_bytes.h"
#include "comm/network_model.h"

namespace cedar {
namespace {

enum class Kind { kAllreduce, kAllgather, kBroadcast };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kAllreduce: return "allreduce";
    case Kind::kAllgather: return "allgather";
    case Kind::kBroadcast: return "broadcast";
  }
  return "?";
}

// One timed size of one collective.
struct Point {
  Kind kind;
  int64_t bytes;                // allreduce / broadcast: the buffer; allgather: the total (P * s)
  bool in_fit;                  // an allreduce size the fit uses
  int iters = 0;                // calls per timed loop, set in the first round
  std::vector<double> seconds;  // per repetition
  double measured = 0;          // median of `seconds`
  double predicted = 0;         // from the fitted alpha and beta
};

// The model's latency steps and bus bytes per rank for `p` at `world` ranks.
int64_t latency_steps(const Point& p, int world) {
  switch (p.kind) {
    case Kind::kAllreduce: return allreduce_latency_steps(world);
    case Kind::kAllgather: return allgather_latency_steps(world);
    case Kind::kBroadcast: return broadcast_latency_steps(world);
  }
  return 0;
}
int64_t bus_bytes(const Point& p, int world) {
  switch (p.kind) {
    case Kind::kAllreduce: return allreduce_bus_bytes(p.bytes, world);
    case Kind::kAllgather: return allgather_bus_bytes(p.bytes, world);
    case Kind::kBroadcast: return broadcast_bus_bytes(p.bytes, world);
  }
  return 0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// The sweep: allreduce at every doubling from min to max (even positions fitted, odd ones held
// out); allgather and broadcast at the even positions. Allgather sizes are rounded down to a
// multiple of 4P bytes so every rank sends the same whole number of floats.
std::vector<Point> make_points(const AlphaBetaFitOptions& o, int world) {
  std::vector<Point> points;
  int index = 0;
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2, ++index)
    points.push_back({Kind::kAllreduce, bytes / 4 * 4, index % 2 == 0, 0, {}});
  for (Kind k : {Kind::kAllgather, Kind::kBroadcast}) {
    for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
      const int64_t quantum = k == Kind::kAllgather ? 4 * world : 4;
      if (bytes < quantum) continue;
      points.push_back({k, bytes / quantum * quantum, false, 0, {}});
    }
  }
  return points;
}

struct Buffers {
  std::vector<float> in;   // allreduce / broadcast buffer, or this rank's allgather share
  std::vector<float> out;  // allgather output
};

Buffers make_buffers(const Point& p, int world) {
  Buffers b;
  const int64_t floats = p.bytes / 4;
  b.in.assign(p.kind == Kind::kAllgather ? floats / world : floats, 0.0f);
  if (p.kind == Kind::kAllgather) b.out.assign(floats, 0.0f);
  return b;
}

// One call of the raw MPI collective.
void call(Kind k, Buffers& b) {
  const int floats = static_cast<int>(b.in.size());
  switch (k) {
    case Kind::kAllreduce:
      MPI_Allreduce(MPI_IN_PLACE, b.in.data(), floats, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case Kind::kAllgather:
      MPI_Allgather(b.in.data(), floats, MPI_FLOAT, b.out.data(), floats, MPI_FLOAT,
                    MPI_COMM_WORLD);
      break;
    case Kind::kBroadcast: MPI_Bcast(b.in.data(), floats, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
  }
}

// Seconds per call of `calls` calls back to back, the slowest rank's (the same on every rank).
double slowest_per_call(Kind k, Buffers& b, int calls) {
  const double t0 = MPI_Wtime();
  for (int i = 0; i < calls; ++i) call(k, b);
  const double per_call = (MPI_Wtime() - t0) / calls;
  double slowest = 0;
  MPI_Allreduce(&per_call, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// Calls per timed loop: batches of 1, 2, 4, ... 256 calls back to back, stopping early once the
// batches have taken twice `loop_seconds`; the fastest batch's time per call sets the count, so
// that a loop at that rate lasts `loop_seconds` (3 to 1000 calls). The fastest, because under
// load a short batch can wait a whole scheduler slice for another rank, which would leave a fast
// size with 3 calls. The times are the slowest rank's, the same on every rank, so every rank
// makes the same number of calls.
int calibrate_iters(Kind k, Buffers& b, double loop_seconds) {
  double spent = 0, fastest = INFINITY;
  for (int calls = 1; calls <= 256 && spent < 2 * loop_seconds; calls *= 2) {
    const double per_call = slowest_per_call(k, b, calls);
    spent += per_call * calls;
    fastest = std::min(fastest, per_call);
  }
  return static_cast<int>(std::clamp(loop_seconds / fastest, 3.0, 1000.0));
}

// Seconds per call of one timed loop. Buffers hold zeros (the allreduce sums stay zero: no
// growth, no denormals). The first loop for `p` also sets p.iters, after the warm-up (which pays
// first-touch and connection set-up).
double time_loop(Point& p, int warmup, double loop_seconds, int world) {
  Buffers b = make_buffers(p, world);
  for (int i = 0; i < warmup; ++i) call(p.kind, b);
  if (p.iters == 0) p.iters = calibrate_iters(p.kind, b, loop_seconds);
  MPI_Barrier(MPI_COMM_WORLD);
  return slowest_per_call(p.kind, b, p.iters);
}

// Times every point `reps` times; returns the wall seconds the sweep took.
double measure(std::vector<Point>& points, const AlphaBetaFitOptions& o, int world) {
  const double t0 = MPI_Wtime();
  for (int r = 0; r < o.reps; ++r) {
    for (size_t i = 0; i < points.size(); ++i) {
      Point& p = points[r % 2 ? points.size() - 1 - i : i];
      p.seconds.push_back(time_loop(p, o.warmup, o.loop_seconds, world));
    }
  }
  for (Point& p : points) p.measured = median(p.seconds);
  return MPI_Wtime() - t0;
}

using Fit = AlphaBetaFit;

// The fit (comm/alpha_beta_least_squares.h) on the points' latency steps, bus bytes and times.
Fit fit_points_alpha_beta(const std::vector<Point>& fit_points, int world) {
  std::vector<TimedSample> samples;
  for (const Point& p : fit_points)
    samples.push_back({double(latency_steps(p, world)), double(bus_bytes(p, world)), p.measured});
  return fit_alpha_beta(samples);
}

double error_pct(const Point& p) { return (p.predicted - p.measured) / p.measured * 100; }

std::string row_label(const Point& p) {
  if (p.kind != Kind::kAllreduce) return kind_name(p.kind);
  return p.in_fit ? "allreduce (fit)" : "allreduce (held out)";
}

// Error % of the rows labelled `label`.
std::vector<double> errors(const std::vector<Point>& points, const std::string& label) {
  std::vector<double> e;
  for (const Point& p : points)
    if (row_label(p) == label) e.push_back(error_pct(p));
  return e;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : "unknown";
}

void print_header(const AlphaBetaFitOptions& o, const Fit& f, int world, double sweep_seconds) {
  std::printf("## alpha-beta model vs loopback MPI, P = %d ranks\n\n", world);
  std::printf(
      "Raw MPI collectives, %d warm-up calls, median of %d timed loops per size, time of "
      "the slowest rank; sweep took %.1f s, load average at the end: %s.\n",
      o.warmup, o.reps, sweep_seconds, load_average().c_str());
  std::printf(
      "Fit on allreduce only (the \"(fit)\" rows), L = %lld steps, minimising squared "
      "relative error%s:\n\n",
      static_cast<long long>(allreduce_latency_steps(world)),
      f.bounded ? " (bounded at zero: the free optimum had a negative parameter)" : "");
  std::printf("- alpha = %.3f µs per latency step\n", f.alpha * 1e6);
  std::printf("- beta = %.4g ns per bus byte (1/beta = %.3f GB/s)\n\n", f.beta * 1e9,
              f.beta > 0 ? 1e-9 / f.beta : INFINITY);
}

void print_table(const std::vector<Point>& points) {
  std::printf("| collective | bytes | measured µs | predicted µs | error %% |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (const Point& p : points)
    std::printf("| %s | %lld | %.2f | %.2f | %+.1f |\n", row_label(p).c_str(),
                static_cast<long long>(p.bytes), p.measured * 1e6, p.predicted * 1e6, error_pct(p));
}

void print_summary(const std::vector<Point>& points) {
  std::printf("\nmedian |error| (signed median in parentheses):");
  const char* sep = " ";
  for (const char* label : {"allreduce (fit)", "allreduce (held out)", "allgather", "broadcast"}) {
    std::vector<double> e = errors(points, label);
    if (e.empty()) continue;
    const double signed_median = median(e);
    for (double& x : e) x = std::fabs(x);
    std::printf("%s%s %.1f%% (%+.1f%%)", sep, label, median(e), signed_median);
    sep = "; ";
  }
  std::printf("\n");
}

// Why the predictions can miss here; the signed medians above say in which direction they did.
void print_footer() {
  std::printf(
      "\nNotes (error = (predicted - measured) / measured; the load average above says how busy "
      "the machine was):\n"
      "- The model counts a ring of P network links. Loopback MPI copies through shared memory on "
      "one host: every \"link\" shares the same memory bus and cores, so beta is a memory-copy "
      "rate, not a wire rate.\n"
      "- The MPI library picks its own algorithm per size and rank count (e.g. recursive "
      "doubling or a two-process exchange for small messages, segmented trees or pipelines for "
      "broadcast), so the steps actually run differ from the L and B the model assumes.\n"
      "- At one P every allreduce size has the same L, so the fit cannot tell per-step latency "
      "from per-call software overhead; allgather (L = P-1) and broadcast (L = ceil(log2 P)) "
      "inherit that split, which mostly shows at small sizes.\n"
      "- beta fitted on allreduce includes the fp32 summation, which allgather and broadcast do "
      "not do; back-to-back broadcasts can also overlap in the timed loop (the root need not wait "
      "for the receivers).\n"
      "- With more ranks than free cores the ranks time-share, and scheduler delays add to both "
      "the fitted alpha and the measured times.\n");
}

bool write_csv(const std::string& path, const std::vector<Point>& points, const Fit& f, int world) {
  FILE* out = std::fopen(path.c_str(), "w");
  if (!out) return false;
  std::fprintf(out,
               "collective,role,ranks,bytes,latency_steps,bus_bytes,iters,measured_seconds,"
               "predicted_seconds,error_pct,alpha_seconds,beta_seconds_per_byte\n");
  for (const Point& p : points)
    std::fprintf(out, "%s,%s,%d,%lld,%lld,%lld,%d,%.9g,%.9g,%.6g,%.9g,%.9g\n", kind_name(p.kind),
                 p.in_fit ? "fit" : "predict", world, static_cast<long long>(p.bytes),
                 static_cast<long long>(latency_steps(p, world)),
                 static_cast<long long>(bus_bytes(p, world)), p.iters, p.measured, p.predicted,
                 error_pct(p), f.alpha, f.beta);
  std::fclose(out);
  return true;
}

}  // namespace

int run_alpha_beta_fit(const AlphaBetaFitOptions& options) {
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (world < 2) {  // the model has no latency steps and no bus bytes at one rank
    if (rank == 0) std::fprintf(stderr, "comm_bench --fit: needs at least 2 ranks\n");
    return 1;
  }
  std::vector<Point> points = make_points(options, world);
  const double sweep_seconds = measure(points, options, world);

  std::vector<Point> fit_points;
  for (const Point& p : points)
    if (p.in_fit) fit_points.push_back(p);
  const Fit f = fit_points_alpha_beta(fit_points, world);
  const NetworkProfile model{"loopback-fit", f.alpha, f.beta};
  for (Point& p : points) p.predicted = model.seconds(latency_steps(p, world), bus_bytes(p, world));

  if (rank != 0) return 0;
  print_header(options, f, world, sweep_seconds);
  print_table(points);
  print_summary(points);
  print_footer();
  if (!options.csv.empty() && !write_csv(options.csv, points, f, world)) {
    std::fprintf(stderr, "comm_bench: cannot write %s\n", options.csv.c_str());
    return 2;
  }
  return 0;
}

}  // namespace cedar
