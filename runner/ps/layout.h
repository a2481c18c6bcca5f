#pragma once
// Who does what in a parameter-server run: ranks 0..servers-1 are servers, the others workers,
// and each server holds whole parameters of the model, balanced by bytes.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace cedar {

struct PsLayout {
  int servers = 1;
  int workers = 1;
  std::vector<int> server_of;        // per parameter (model order): the server holding it
  std::vector<int64_t> shard_numel;  // per server: the elements of its shard
  bool is_server(int rank) const { return rank < servers; }
  int worker_of_rank(int rank) const { return rank - servers; }
  int rank_of_worker(int worker) const { return servers + worker; }
};

// Assigns each parameter (by element count, model order) to a server: largest first, each to the
// server holding the fewest elements so far (the lowest index on a tie), so the shards' bytes are
// balanced. Throws std::invalid_argument when servers < 1, world_size <= servers, or a server
// would hold nothing (fewer parameters than servers).
PsLayout make_ps_layout(const std::vector<int64_t>& numels, int servers, int world_size);

// The parameters of `server`'s shard, concatenated flat in model order (a new tensor).
at::Tensor flatten_shard(const std::vector<at::Tensor>& tensors, const PsLayout& layout,
                         int server);
// Copies `flat` (a shard as flatten_shard lays it out) into the shard's tensors.
void unflatten_shard(const at::Tensor& flat, const std::vector<at::Tensor>& tensors,
                     const PsLayout& layout, int server);

}  // namespace cedar
