#pragma once
// The one communication pattern of gossip algorithms: every rank sends one tensor to each of its
// neighbours and receives one from each, one sendrecv per exchange of the topology
// (algorithms/gossip/topology.h), so that the metered cost is exactly degree × the tensor's bytes
// and degree latency steps, and nothing is collective.
#include <ATen/core/Tensor.h>

#include <vector>

#include "algorithms/gossip/topology.h"

namespace cedar {

class Communicator;

// Sends `mine` (contiguous) along every exchange of `topology` and returns what each exchange
// received (same numel and dtype as `mine`, on its device), in the topology's exchange order.
// `topology.size` must equal comm.size(). Collective over the ranks of `comm` in the sense that
// every rank must call it with tensors of the same numel and dtype.
std::vector<at::Tensor> exchange_with_neighbours(const Topology& topology, const at::Tensor& mine,
                                                 Communicator& comm, int tag);
// The same into `received`, whose tensors are reused where they already have mine's numel, dtype
// and device (a fresh buffer of a large model costs a page fault per 4 KiB on every step).
void exchange_with_neighbours(const Topology& topology, const at::Tensor& mine, Communicator& comm,
                              int tag, std::vector<at::Tensor>& received);

// Σ_j W_rj x_j for this rank r: weight() × (mine + Σ received). `received` as returned above.
at::Tensor mix_uniform(const Topology& topology, const at::Tensor& mine,
                       const std::vector<at::Tensor>& received);
// out <- Σ_j W_rj x_j − x_r, the bits of mix_uniform(topology, mine, received).sub_(mine): on the
// CPU in fp32 in one pass, elsewhere with those tensor operations. `out` is resized to mine's shape
// where it differs (and may be reused between calls).
void mix_uniform_minus_mine(const Topology& topology, const at::Tensor& mine,
                            const std::vector<at::Tensor>& received, at::Tensor& out);

}  // namespace cedar
