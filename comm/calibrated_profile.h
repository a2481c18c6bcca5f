#pragma once
// A calibrated network profile from timed collectives (`cedar network calibrate`): α and β fitted
// per collective and per rank count P by comm/alpha_beta_least_squares.h on the collective's own
// form. No LibTorch, no MPI here.
#include <string>
#include <vector>

#include "comm/network_model.h"

namespace cedar {

// One size of one collective on `world` ranks: the median over repetitions of the time per call,
// averaged over the ranks.
struct CollectiveTiming {
  std::string op;      // allreduce, allgather, allgatherv, broadcast, sendrecv
  int world = 2;       // P
  double bytes = 0;    // S (allreduce, broadcast, sendrecv) or s per rank (allgather[v])
  double seconds = 0;  // per call
  int calls = 1;       // calls back to back in each timed loop
};

// The profile `name`: one fit per (op, P) of `timings` (at least two sizes each), and as its
// default alpha and beta the allreduce fit at the largest P (the first op's when there is no
// allreduce). Throws std::invalid_argument when `timings` is empty, an (op, P) has fewer than two
// sizes, or an op has no α–β form.
NetworkProfile fit_network_profile(const std::vector<CollectiveTiming>& timings,
                                   const std::string& name, const std::string& measured_on);

}  // namespace cedar
