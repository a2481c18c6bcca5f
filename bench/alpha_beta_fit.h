#pragma once
// `comm_bench --fit`: a check of the alpha-beta cost model (comm/network_model.h) on the
// machine's own MPI. Raw MPI_Allreduce is timed over a size sweep; alpha and beta are fitted to
// t = L*alpha + B*beta (L latency steps, B bus bytes per rank from the model) on every other
// allreduce size only; the fit then predicts the held-out allreduce sizes, MPI_Allgather and
// MPI_Bcast, which are timed too, and rank 0 prints measured vs predicted as a markdown table.
// Needs MPI initialised (MPI_COMM_WORLD); every rank calls it.
#include <cstdint>
#include <string>

namespace cedar {

struct AlphaBetaFitOptions {
  int64_t min_bytes = 4096;      // smallest size; the sweep doubles from here
  int64_t max_bytes = 16 << 20;  // largest size
  int warmup = 5;                // untimed calls before each timed loop
  int reps = 5;                  // timed loops per size (the median is used)
  double loop_seconds = 0.01;    // target length of one timed loop (sets its iterations)
  std::string csv;               // rank 0 also writes the rows here when not empty
};

// Times, fits and prints (rank 0). Returns the process exit status (0, or 2 if the CSV file
// cannot be written).
int run_alpha_beta_fit(const AlphaBetaFitOptions& options);

}  // namespace cedar
