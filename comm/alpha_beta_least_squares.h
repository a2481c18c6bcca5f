#pragma once
// The least-squares fit of the α–β model (comm/network_model.h) to timed collectives, shared by
// `bench/comm_bench --fit` and `cedar network calibrate`. Each sample is one collective's time t
// with the model's latency steps L and bus bytes B for its size and rank count; the fit is the
// α, β ≥ 0 minimising the sum of squared relative errors ((L·α + B·β − t) / t)², so that a sweep
// of sizes over several decades weighs every size alike. No LibTorch here.
#include <string>
#include <vector>

namespace cedar {

struct TimedSample {
  double latency_steps = 0;  // L of the call
  double bus_bytes = 0;      // B of the call
  double seconds = 0;        // measured time of one call (> 0)
};

struct AlphaBetaFit {
  double alpha = 0, beta = 0;  // seconds per latency step, seconds per bus byte
  bool bounded = false;        // the unconstrained optimum had a negative parameter
};

// Weighted least squares with weights 1/t²: in x1 = L/t, x2 = B/t the problem is
// min Σ (x1 α + x2 β − 1)², solved by a QR factorisation of the two columns (Gram–Schmidt), which
// keeps the accuracy that normal equations would square away. A negative parameter has no
// physical meaning; then the better of the two one-parameter fits (α = 0 or β = 0) is taken,
// which is the optimum over α, β ≥ 0. Throws std::invalid_argument for no samples or a
// non-positive time.
AlphaBetaFit fit_alpha_beta(const std::vector<TimedSample>& samples);

// Σ ((L·α + B·β) / t − 1)² of (α, β) over `samples`.
double relative_cost(const std::vector<TimedSample>& samples, double alpha, double beta);

// L and B of one call of a collective Cedar meters, on `world` ranks, as reports/projection.h
// costs it:
//   allreduce of S bytes:            L = 2(P−1),       B = 2(P−1)/P · S
//   allgather of s bytes per rank:   L = P−1,          B = (P−1) · s
//   allgatherv of s bytes per rank:  L = 2(P−1),       B = (P−1) · s   (counts, then data)
//   broadcast of S bytes:            L = ⌈log2 P⌉,     B = S
//   sendrecv of one S-byte message:  L = 1,            B = S
// `bytes` is S or s. Throws std::invalid_argument for another op.
TimedSample collective_terms(const std::string& op, int world, double bytes);
// The five ops above, in that order.
const std::vector<std::string>& calibrated_collectives();

}  // namespace cedar
