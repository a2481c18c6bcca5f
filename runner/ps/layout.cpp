#include "runner/ps/layout.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace cedar {

PsLayout make_ps_layout(const std::vector<int64_t>& numels, int servers, int world_size) {
  if (servers < 1) throw std::invalid_argument("ps: servers must be at least 1");
  if (world_size <= servers)
    throw std::invalid_argument("ps: " + std::to_string(servers) + " server(s) need at least " +
                                std::to_string(servers + 1) + " ranks (world size " +
                                std::to_string(world_size) + " leaves no worker)");
  if (static_cast<int>(numels.size()) < servers)
    throw std::invalid_argument("ps: " + std::to_string(servers) + " servers for a model of " +
                                std::to_string(numels.size()) +
                                " parameters: a server would hold nothing");
  PsLayout layout;
  layout.servers = servers;
  layout.workers = world_size - servers;
  layout.server_of.assign(numels.size(), 0);
  layout.shard_numel.assign(static_cast<size_t>(servers), 0);
  std::vector<size_t> order(numels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return numels[a] > numels[b]; });
  for (size_t i : order) {
    const auto lightest = std::min_element(layout.shard_numel.begin(), layout.shard_numel.end());
    const int server = static_cast<int>(lightest - layout.shard_numel.begin());
    layout.server_of[i] = server;
    *lightest += numels[i];
  }
  return layout;
}

at::Tensor flatten_shard(const std::vector<at::Tensor>& tensors, const PsLayout& layout,
                         int server) {
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (layout.server_of[i] == server) parts.push_back(tensors[i].detach().reshape({-1}));
  return at::cat(parts);
}

void unflatten_shard(const at::Tensor& flat, const std::vector<at::Tensor>& tensors,
                     const PsLayout& layout, int server) {
  at::NoGradGuard no_grad;
  int64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (layout.server_of[i] != server) continue;
    const int64_t n = tensors[i].numel();
    tensors[i].detach().view({-1}).copy_(flat.narrow(0, offset, n));
    offset += n;
  }
}

}  // namespace cedar
