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
// allreduce). With `band_edges` (bytes, increasing, each > 0), each (op, P) also gets size bands
// (network_model.h): a fit on the sizes below the first edge, one on those from each edge to the
// next, one from the last edge on; a band holding none of an (op, P)'s sizes is left out of its
// bands (the band below it reaches over it; the lowest band fitted starts at 0). Throws
// std::invalid_argument when `timings` is empty, an (op, P) or one of its bands has fewer than two
// sizes, the edges do not increase, or an op has no α–β form.
NetworkProfile fit_network_profile(const std::vector<CollectiveTiming>& timings,
                                   const std::string& name, const std::string& measured_on,
                                   const std::vector<double>& band_edges = {});

// The profile above without bands, and as each (op, P)'s bands its segments: with s_1 < ... < s_n
// the sizes timed and t_i the mean of their medians (the calibrations' timings of one size), the
// band from s_i (the first from 0) holds the α and β of the line through (s_i, t_i) and
// (s_i+1, t_i+1), the last band the line through the last two sizes: the model prices every size
// timed at its time, a size between two at the straight line between them, a size beyond the
// largest on the last segment. The line's α may be negative (time grows faster than the bytes
// between two sizes), except in the first band, which reaches down to 0 bytes; there, and where
// the time falls between two sizes (β < 0), the segment is fitted with α, β >= 0
// (comm/alpha_beta_least_squares.h) and passes near, not through, its two times. Throws as the
// profile above does.
NetworkProfile fit_network_profile_segments(const std::vector<CollectiveTiming>& timings,
                                            const std::string& name,
                                            const std::string& measured_on);

}  // namespace cedar
