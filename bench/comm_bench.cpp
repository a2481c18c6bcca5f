// Allreduce and allgather bandwidth through Cedar's communicator (MpiCommunicator wrapped in the
// MeteredCommunicator, as training uses it) against the raw MPI calls, in one binary:
//   mpirun -np 2 build/bench/comm_bench [--min-bytes 4096] [--max-bytes 67108864] [--csv FILE]
// Method of nccl-tests: per size, warm-up calls, then `iters` timed calls; the time per call is
// averaged over ranks; algbw = S / t, busbw = algbw * 2(n-1)/n (allreduce) or (n-1)/n
// (allgather), with S the allreduce buffer or the whole gathered output; GB/s = 1e9 bytes/s.
// Correctness is checked outside the timed loop (exact integer-valued fp32 sums / gathered
// values) and the number of wrong elements over all ranks is printed in the same row.
// The two paths are timed alternately (which goes first alternates too), `reps` times each; the
// median time is reported, with the busbw range over the repetitions as a measure of the noise,
// and the median over repetitions of the paired ratio busbw(cedar) / busbw(MPI) of the two loops
// timed back to back, which a change of the machine's load during the run affects least.
// --allreduce SCHEME times the cedar path's allreduce as network.allreduce runs it (ring,
// halving_doubling, tree, two_level with --ranks-per-node; comm/allreduce_algorithms.h) against
// the same raw MPI_Allreduce; busbw keeps the ring factor, so it compares times.
// With --fit it instead checks the alpha-beta cost model (bench/alpha_beta_fit.h): alpha and beta
// are fitted on raw MPI_Allreduce timings (4 KiB to 16 MiB by default) and predict held-out
// allreduce sizes, MPI_Allgather and MPI_Bcast, printed as a markdown table of measured vs
// predicted times:
//   mpirun -np 2 build/bench/comm_bench --fit [--reps 5] [--loop-ms 10] [--csv FILE]
#include <mpi.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/alpha_beta_fit.h"
#include "comm/bus_bytes.h"
#include "comm/metered_communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/network_model.h"

namespace cedar {
namespace {

enum class Op { kAllreduce, kAllgather };
enum class Path { kCedar, kMpi };

const char* op_name(Op op) { return op == Op::kAllreduce ? "allreduce" : "allgather"; }
const char* path_name(Path p) { return p == Path::kCedar ? "cedar" : "mpi"; }

struct Buffers {
  at::Tensor data;    // allreduce: the S-byte buffer; allgather: this rank's S/n bytes
  at::Tensor gather;  // allgather, raw MPI path: the S-byte output (reused)
};

// One call of `op` on `path`.
void call(Op op, Path path, Buffers& b, MeteredCommunicator& comm) {
  if (op == Op::kAllreduce) {
    if (path == Path::kCedar) {
      comm.allreduce_sum(b.data);
    } else {
      MPI_Allreduce(MPI_IN_PLACE, b.data.data_ptr(), static_cast<int>(b.data.numel()), MPI_FLOAT,
                    MPI_SUM, MPI_COMM_WORLD);
    }
  } else {
    const int bytes = static_cast<int>(b.data.numel() * 4);
    if (path == Path::kCedar) {
      comm.allgather(b.data);  // a fresh output tensor per call, as algorithms receive it
    } else {
      MPI_Allgather(b.data.data_ptr(), bytes, MPI_BYTE, b.gather.data_ptr(), bytes, MPI_BYTE,
                    MPI_COMM_WORLD);
    }
  }
}

// Seconds per call, averaged over ranks.
double time_calls(Op op, Path path, Buffers& b, MeteredCommunicator& comm, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) call(op, path, b, comm);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) call(op, path, b, comm);
  double per_call = (MPI_Wtime() - t0) / iters;
  double sum = 0;
  MPI_Allreduce(&per_call, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / comm.size();
}

// Pattern value of element i on `rank`: small integers, so fp32 sums are exact.
float pattern(int64_t i, int rank) { return static_cast<float>((i % 13) + 1 + 16 * rank); }

// Wrong elements over all ranks after one call on a freshly filled buffer.
int64_t check(Op op, Path path, Buffers& b, MeteredCommunicator& comm) {
  const int n = comm.size(), rank = comm.rank();
  float* d = b.data.data_ptr<float>();
  const int64_t count = b.data.numel();
  for (int64_t i = 0; i < count; ++i) d[i] = pattern(i, rank);
  int64_t wrong = 0;
  if (op == Op::kAllreduce) {
    call(op, path, b, comm);
    for (int64_t i = 0; i < count; ++i) {
      float expect = 0;
      for (int r = 0; r < n; ++r) expect += pattern(i, r);
      wrong += d[i] != expect;
    }
  } else {
    at::Tensor out;
    if (path == Path::kCedar) {
      out = comm.allgather(b.data);
    } else {
      call(op, path, b, comm);
      out = b.gather;
    }
    const float* o = out.data_ptr<float>();
    wrong += out.numel() != count * n;
    for (int r = 0; r < n && out.numel() == count * n; ++r)
      for (int64_t i = 0; i < count; ++i) wrong += o[r * count + i] != pattern(i, r);
  }
  int64_t total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  b.data.zero_();  // timed calls run on zeros (no growth of the values, no denormals)
  return total;
}

struct Row {
  Op op;
  Path path;
  int64_t bytes;
  int iters;
  double seconds;           // median over repetitions
  double fastest, slowest;  // over repetitions
  double paired_ratio;      // cedar rows: median of busbw(cedar) / busbw(mpi) per repetition
  int64_t wrong;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace
}  // namespace cedar

int main(int argc, char** argv) {
  using namespace cedar;
  CLI::App app{"Allreduce / allgather busbw: Cedar's metered MPI communicator vs raw MPI"};
  int64_t min_bytes = 4096, max_bytes = 64 << 20;
  int warmup = 5, reps = 5;
  int64_t bytes_per_rep = int64_t(1) << 26;
  std::string csv;
  const auto sizes = CLI::Range(int64_t(64), int64_t(1) << 31);
  app.add_option("--min-bytes", min_bytes, "smallest message size (bytes)")->check(sizes);
  app.add_option("--max-bytes", max_bytes, "largest message size (bytes), doubling from min")
      ->check(sizes);
  app.add_option("--warmup", warmup, "untimed calls before each timed loop")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--reps", reps, "timed loops per path and size (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--bytes-per-rep", bytes_per_rep,
                 "iterations per timed loop = clamp(this / size, 5, 1000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--csv", csv, "also write the rows to this CSV file (rank 0)");
  std::string scheme = "library";
  int ranks_per_node = 1;
  app.add_option("--allreduce", scheme, "the cedar path's allreduce scheme (network.allreduce)")
      ->check(CLI::IsMember(allreduce_scheme_names()));
  app.add_option("--ranks-per-node", ranks_per_node, "two_level: ranks per node")
      ->check(CLI::PositiveNumber);
  bool fit = false;
  double loop_ms = 10;
  app.add_flag("--fit", fit,
               "fit alpha-beta on raw MPI allreduce and predict allgather / broadcast "
               "(--max-bytes defaults to 16 MiB here)");
  app.add_option("--loop-ms", loop_ms,
                 "--fit: target length of one timed loop in ms (replaces --bytes-per-rep)")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  torch::set_num_threads(1);
  MpiCommunicator mpi;
  if (fit) {
    const bool max_given = app.get_option("--max-bytes")->count() > 0;
    return run_alpha_beta_fit(
        {min_bytes, max_given ? max_bytes : int64_t(16) << 20, warmup, reps, loop_ms / 1e3, csv});
  }
  MeteredCommunicator comm(mpi);
  comm.use_allreduce(parse_allreduce_scheme(scheme), ranks_per_node);
  const int n = comm.size();
  const bool root = comm.rank() == 0;

  std::vector<Row> rows;
  for (Op op : {Op::kAllreduce, Op::kAllgather}) {
    for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      // Allgather: `bytes` is the gathered output; each rank contributes bytes / n.
      const int64_t per_rank = op == Op::kAllreduce ? bytes : bytes / n;
      const int64_t elems = per_rank / 4;
      if (elems == 0) continue;
      Buffers b;
      b.data = at::zeros({elems});
      if (op == Op::kAllgather) b.gather = at::zeros({elems * n});
      const int iters = static_cast<int>(std::clamp<int64_t>(bytes_per_rep / bytes, 5, 1000));
      std::vector<double> secs[2];
      int64_t wrong[2] = {check(op, Path::kCedar, b, comm), check(op, Path::kMpi, b, comm)};
      for (int r = 0; r < reps; ++r) {
        const Path first = r % 2 ? Path::kMpi : Path::kCedar;
        const Path second = r % 2 ? Path::kCedar : Path::kMpi;
        for (Path p : {first, second})
          secs[static_cast<int>(p)].push_back(time_calls(op, p, b, comm, warmup, iters));
      }
      std::vector<double> paired;
      for (int r = 0; r < reps; ++r) paired.push_back(secs[1][r] / secs[0][r]);
      for (Path p : {Path::kCedar, Path::kMpi}) {
        const auto& v = secs[static_cast<int>(p)];
        rows.push_back({op, p, elems * 4 * (op == Op::kAllgather ? n : 1), iters, median(v),
                        *std::min_element(v.begin(), v.end()),
                        *std::max_element(v.begin(), v.end()),
                        p == Path::kCedar ? median(paired) : 1.0, wrong[static_cast<int>(p)]});
      }
    }
  }

  if (root) {
    std::printf(
        "# %d ranks, cedar allreduce %s, %d warm-up calls, median of %d timed loops; GB/s = 1e9 "
        "B/s\n",
        n, scheme.c_str(), warmup, reps);
    std::printf("%-10s %-6s %12s %6s %12s %9s %9s %19s %7s %7s\n", "op", "path", "size(B)", "iters",
                "time(us)", "algbw", "busbw", "busbw range", "vs mpi", "#wrong");
    for (const Row& r : rows) {
      const double algbw = algbw_gbps(r.bytes, r.seconds);
      const double factor =
          r.op == Op::kAllreduce ? allreduce_busbw_factor(n) : allgather_busbw_factor(n);
      std::printf("%-10s %-6s %12lld %6d %12.2f %9.3f %9.3f %9.3f - %7.3f %7.3f %7lld\n",
                  op_name(r.op), path_name(r.path), static_cast<long long>(r.bytes), r.iters,
                  r.seconds * 1e6, algbw, algbw * factor, algbw_gbps(r.bytes, r.slowest) * factor,
                  algbw_gbps(r.bytes, r.fastest) * factor, r.paired_ratio,
                  static_cast<long long>(r.wrong));
    }
    if (!csv.empty()) {
      FILE* f = std::fopen(csv.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "comm_bench: cannot write %s\n", csv.c_str());
        MpiCommunicator::abort_job(2);
      }
      std::fprintf(f,
                   "op,path,ranks,bytes,iters,seconds,algbw_gbps,busbw_gbps,busbw_min_gbps,"
                   "busbw_max_gbps,paired_ratio,wrong\n");
      for (const Row& r : rows) {
        const double algbw = algbw_gbps(r.bytes, r.seconds);
        const double factor =
            r.op == Op::kAllreduce ? allreduce_busbw_factor(n) : allgather_busbw_factor(n);
        std::fprintf(f, "%s,%s,%d,%lld,%d,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%lld\n", op_name(r.op),
                     path_name(r.path), n, static_cast<long long>(r.bytes), r.iters, r.seconds,
                     algbw, algbw * factor, algbw_gbps(r.bytes, r.slowest) * factor,
                     algbw_gbps(r.bytes, r.fastest) * factor, r.paired_ratio,
                     static_cast<long long>(r.wrong));
      }
      std::fclose(f);
    }
  }
  int64_t any_wrong = 0;
  for (const Row& r : rows) any_wrong += r.wrong;
  return any_wrong ? 1 : 0;
}
