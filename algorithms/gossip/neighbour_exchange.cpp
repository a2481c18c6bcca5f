#include "algorithms/gossip/neighbour_exchange.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "algorithms/codecs/simd.h"
#include "comm/communicator.h"

namespace cedar {

std::vector<at::Tensor> exchange_with_neighbours(const Topology& topology, const at::Tensor& mine,
                                                 Communicator& comm, int tag) {
  std::vector<at::Tensor> received;
  exchange_with_neighbours(topology, mine, comm, tag, received);
  return received;
}

void exchange_with_neighbours(const Topology& topology, const at::Tensor& mine, Communicator& comm,
                              int tag, std::vector<at::Tensor>& received) {
  if (topology.size != comm.size())
    throw std::invalid_argument("gossip: a topology of " + std::to_string(topology.size) +
                                " ranks used on a communicator of " + std::to_string(comm.size()));
  const auto r = static_cast<size_t>(comm.rank());
  received.resize(topology.exchanges.size());
  for (size_t k = 0; k < topology.exchanges.size(); ++k) {
    const auto& p = topology.exchanges[k];
    at::Tensor& in = received[k];
    if (!in.defined() || in.numel() != mine.numel() || in.scalar_type() != mine.scalar_type() ||
        in.device() != mine.device() || !in.is_contiguous())
      in = at::empty_like(mine, at::MemoryFormat::Contiguous);
    in = in.view(mine.sizes());
    comm.sendrecv(mine, p.to[r], in, p.from[r], tag);
  }
}

at::Tensor mix_uniform(const Topology& topology, const at::Tensor& mine,
                       const std::vector<at::Tensor>& received) {
  at::Tensor sum = mine.clone();
  for (const auto& t : received) sum.add_(t);
  return sum.mul_(topology.weight());
}

void mix_uniform_minus_mine(const Topology& topology, const at::Tensor& mine,
                            const std::vector<at::Tensor>& received, at::Tensor& out) {
  bool fused = mine.device().is_cpu() && mine.scalar_type() == at::kFloat && mine.is_contiguous();
  for (const auto& t : received)
    fused = fused && t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() &&
            t.numel() == mine.numel();
  if (!fused) {
    out = mix_uniform(topology, mine, received).sub_(mine);
    return;
  }
  if (!out.defined() || out.numel() != mine.numel() || out.scalar_type() != at::kFloat ||
      !out.device().is_cpu() || !out.is_contiguous())
    out = at::empty({mine.numel()}, at::kFloat);
  out = out.view(mine.sizes());
  // ((x + r_1) + r_2 ...) · w − x per element: clone, add_ in order, mul_ by the weight (as fp32,
  // as LibTorch's CPU kernels take a scalar), sub_, chunk by chunk while it is cached.
  const float w = static_cast<float>(topology.weight());
  const float* x = mine.data_ptr<float>();
  float* o = out.data_ptr<float>();
  std::vector<const float*> in;
  for (const auto& t : received) in.push_back(t.data_ptr<float>());
  const int64_t n = mine.numel();
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t m = std::min(kChunk, n - c0);
    float* s = o + c0;
    std::copy(x + c0, x + c0 + m, s);
    for (const float* r : in)
      for (int64_t i = 0; i < m; ++i) s[i] += r[c0 + i];
    for (int64_t i = 0; i < m; ++i) s[i] = s[i] * w - x[c0 + i];
  }
}

}  // namespace cedar
