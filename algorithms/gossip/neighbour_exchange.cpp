#include "algorithms/gossip/neighbour_exchange.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "comm/communicator.h"

namespace cedar {

std::vector<at::Tensor> exchange_with_neighbours(const Topology& topology, const at::Tensor& mine,
                                                 Communicator& comm, int tag) {
  if (topology.size != comm.size())
    throw std::invalid_argument("gossip: a topology of " + std::to_string(topology.size) +
                                " ranks used on a communicator of " + std::to_string(comm.size()));
  const auto r = static_cast<size_t>(comm.rank());
  std::vector<at::Tensor> received;
  received.reserve(topology.exchanges.size());
  for (const auto& p : topology.exchanges) {
    at::Tensor in = at::empty_like(mine, at::MemoryFormat::Contiguous);
    comm.sendrecv(mine, p.to[r], in, p.from[r], tag);
    received.push_back(in);
  }
  return received;
}

at::Tensor mix_uniform(const Topology& topology, const at::Tensor& mine,
                       const std::vector<at::Tensor>& received) {
  at::Tensor sum = mine.clone();
  for (const auto& t : received) sum.add_(t);
  return sum.mul_(topology.weight());
}

}  // namespace cedar
