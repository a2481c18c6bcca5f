#include "comm/network_calibration.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

namespace cedar {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// The buffers of one collective at one size on `world` ranks, filled so that the result of a
// call is known: rank r contributes the value r + 1 (the root of a broadcast: 7).
class Collective {
 public:
  Collective(std::string op, int64_t bytes, MPI_Comm comm) : op_(std::move(op)), comm_(comm) {
    MPI_Comm_size(comm, &world_);
    MPI_Comm_rank(comm, &rank_);
    count_ = static_cast<int>(bytes / 4);
    const bool gathers = op_ == "allgather" || op_ == "allgatherv";
    in_.assign(count_, float(rank_ + 1));
    out_.assign(gathers ? size_t(count_) * world_ : size_t(count_), 0.0f);
    if (op_ == "broadcast") in_.assign(count_, rank_ == 0 ? 7.0f : 0.0f);
    counts_.assign(world_, count_);
    displs_.resize(world_);
    for (int r = 0; r < world_; ++r) displs_[r] = r * count_;
  }

  void call() {
    if (op_ == "allreduce") {
      MPI_Allreduce(in_.data(), out_.data(), count_, MPI_FLOAT, MPI_SUM, comm_);
    } else if (op_ == "allgather") {
      MPI_Allgather(in_.data(), count_, MPI_FLOAT, out_.data(), count_, MPI_FLOAT, comm_);
    } else if (op_ == "allgatherv") {
      int64_t mine = count_;
      std::vector<int64_t> counts(world_);
      MPI_Allgather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, comm_);
      MPI_Allgatherv(in_.data(), count_, MPI_FLOAT, out_.data(), counts_.data(), displs_.data(),
                     MPI_FLOAT, comm_);
    } else if (op_ == "broadcast") {
      MPI_Bcast(in_.data(), count_, MPI_FLOAT, 0, comm_);
    } else {
      MPI_Sendrecv(in_.data(), count_, MPI_FLOAT, (rank_ + 1) % world_, 17, out_.data(), count_,
                   MPI_FLOAT, (rank_ + world_ - 1) % world_, 17, comm_, MPI_STATUS_IGNORE);
    }
  }

  // Whether the last call's result is what it must be, on every rank.
  bool result_ok() const {
    bool ok = true;
    if (op_ == "allreduce") {
      const float sum = float(world_) * float(world_ + 1) / 2;
      for (float v : out_) ok = ok && v == sum;
    } else if (op_ == "allgather" || op_ == "allgatherv") {
      for (size_t i = 0; i < out_.size(); ++i) ok = ok && out_[i] == float(i / count_ + 1);
    } else if (op_ == "broadcast") {
      for (float v : in_) ok = ok && v == 7.0f;
    } else {
      const float from = float((rank_ + world_ - 1) % world_ + 1);
      for (float v : out_) ok = ok && v == from;
    }
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm_);
    return all == 1;
  }

  // Seconds per call of `calls` calls, each rank's; reduced with `how` over the ranks.
  double per_call(int calls, MPI_Op how) {
    MPI_Barrier(comm_);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < calls; ++i) call();
    const double mine = (MPI_Wtime() - t0) / calls;
    double out = 0;
    MPI_Allreduce(&mine, &out, 1, MPI_DOUBLE, how, comm_);
    return how == MPI_SUM ? out / world_ : out;
  }

 private:
  std::string op_;
  MPI_Comm comm_;
  int world_ = 1, rank_ = 0, count_ = 0;
  std::vector<float> in_, out_;
  std::vector<int> counts_, displs_;
};

// The timings of every op and size on `comm` (P ranks).
std::vector<CollectiveTiming> time_on(const CalibrationOptions& o, MPI_Comm comm) {
  int world = 1;
  MPI_Comm_size(comm, &world);
  std::vector<CollectiveTiming> out;
  for (const std::string& op : o.ops.empty() ? calibration_ops() : o.ops) {
    for (int64_t bytes : o.sizes) {
      Collective c(op, bytes, comm);
      for (int i = 0; i < o.warmup; ++i) c.call();
      c.call();
      if (!c.result_ok())
        throw std::runtime_error("calibration: " + op + " of " + std::to_string(bytes) +
                                 " bytes on " + std::to_string(world) +
                                 " ranks returned a wrong result");
      std::vector<double> loops;
      int calls = 1;
      if (o.idle_seconds > 0) {
        for (int r = 0; r < o.reps; ++r) {
          std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds));
          loops.push_back(c.per_call(1, MPI_SUM));
        }
      } else {
        const double probe = c.per_call(1, MPI_MAX);
        calls = std::max(o.min_calls,
                         static_cast<int>(std::clamp(o.loop_seconds / probe, 1.0, 1000.0)));
        for (int r = 0; r < o.reps; ++r) loops.push_back(c.per_call(calls, MPI_SUM));
      }
      out.push_back({op, world, double(bytes), median(loops), calls});
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& calibration_ops() {
  static const std::vector<std::string> ops = {"allreduce", "allgather", "allgatherv", "broadcast",
                                               "sendrecv"};
  return ops;
}

std::vector<int> calibration_world_sizes(const CalibrationOptions& options, int world) {
  std::vector<int> ps = options.world_sizes;
  if (ps.empty()) {
    for (int p = 2; p < world; p *= 2) ps.push_back(p);
    ps.push_back(world);
  }
  for (int p : ps) {
    if (p < 2 || p > world)
      throw std::invalid_argument("calibration: P = " + std::to_string(p) + " is outside 2.." +
                                  std::to_string(world) + " (the ranks running)");
    if (options.every_group && world % p != 0)
      throw std::invalid_argument("--every-group: P = " + std::to_string(p) +
                                  " does not divide the " + std::to_string(world) +
                                  " ranks running into groups");
  }
  std::sort(ps.begin(), ps.end());
  ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
  return ps;
}

int calibration_group(const CalibrationOptions& options, int rank, int p) {
  if (options.every_group) return rank / p;
  return rank < p ? 0 : -1;
}

void check_calibration_options(const CalibrationOptions& options) {
  if (options.sizes.size() < 2)
    throw std::invalid_argument("--sizes: give two or more sizes (alpha and beta need both)");
  for (int64_t s : options.sizes)
    if (s < 4 || s % 4 != 0 || s / 4 > (1 << 28))
      throw std::invalid_argument("--sizes: " + std::to_string(s) +
                                  " is not a positive multiple of 4 bytes (fp32 values) up to "
                                  "1 GiB");
  if (options.reps < 1) throw std::invalid_argument("--reps: must be at least 1");
  if (options.warmup < 0) throw std::invalid_argument("--warmup: must be at least 0");
  if (options.idle_seconds < 0 || options.idle_seconds > 600)
    throw std::invalid_argument("--idle-ms: must lie in 0..600000");
  if (options.min_calls < 1 || options.min_calls > 1000)
    throw std::invalid_argument("--min-calls: must lie in 1..1000");
  if (options.idle_seconds > 0 && options.min_calls > 1)
    throw std::invalid_argument(
        "--min-calls: --idle-ms times each call alone; give one of the two");
  for (const std::string& op : options.ops)
    if (std::find(calibration_ops().begin(), calibration_ops().end(), op) ==
        calibration_ops().end())
      throw std::invalid_argument("--ops: '" + op +
                                  "' is not one of allreduce, allgather, allgatherv, broadcast, "
                                  "sendrecv");
  if (!options.ops.empty() &&
      std::find(options.ops.begin(), options.ops.end(), "allreduce") == options.ops.end())
    throw std::invalid_argument("--ops: include allreduce (its fit is the profile's default)");
}

std::vector<CollectiveTiming> time_collectives(const CalibrationOptions& options) {
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  check_calibration_options(options);
  std::vector<CollectiveTiming> all;
  for (int p : calibration_world_sizes(options, world)) {
    MPI_Comm sub = MPI_COMM_NULL;
    const int group = calibration_group(options, rank, p);
    MPI_Comm_split(MPI_COMM_WORLD, group >= 0 ? group : MPI_UNDEFINED, rank, &sub);
    if (sub != MPI_COMM_NULL) {
      for (auto& t : time_on(options, sub)) all.push_back(t);
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return all;
}

}  // namespace cedar
