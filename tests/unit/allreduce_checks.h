#pragma once
// The allreduce schemes (comm/allreduce_algorithms.h) checked the same way on any backend (the
// in-process one in allreduce_algorithms_test, MPI in mpi_tests): the result against a reference
// summed here in the scheme's own order (bitwise) and against a plain sum (within fp32 rounding),
// and the bytes and messages each rank sends against the scheme's formulas written here from its
// definition, never from Cedar's cost code.
#include <ATen/core/Tensor.h>

#include <vector>

#include "comm/communicator.h"
#include "comm/network_model.h"

namespace cedar::testing {

// Rank r's input of n floats: standard normals from a generator seeded by (r, n).
at::Tensor scheme_input(int rank, int64_t n);

// The sum of `inputs` (one per rank) in the order `scheme` adds them; two_level with nodes of
// `ranks_per_node` ranks.
at::Tensor reference_sum(AllreduceScheme scheme, const std::vector<at::Tensor>& inputs,
                         int ranks_per_node = 1);

// What rank `rank` of `world` sends in one allreduce of n 4-byte elements.
struct SentByRank {
  int64_t bytes = 0, messages = 0;
};
SentByRank ring_sent(int rank, int world, int64_t n);
SentByRank halving_doubling_sent(int rank, int world, int64_t n);
SentByRank tree_sent(int rank, int world, int64_t n);

// Runs `scheme` through a MeteredCommunicator over `backend` on scheme_input(rank, n) and checks
// the result and the metered counts (two_level: per level). Returns the result.
at::Tensor check_allreduce_scheme(Communicator& backend, AllreduceScheme scheme, int64_t n,
                                  int ranks_per_node = 1);

}  // namespace cedar::testing
