#include "comm/allreduce_algorithms.h"

#include <ATen/ATen.h>

#include <string>

namespace cedar {
namespace {

int64_t chunk_offset(int64_t n, int parts, int c) {
  return c * (n / parts) + std::min<int64_t>(c, n % parts);
}

// Elements [chunk_offset(first), chunk_offset(last)) of the flat view.
at::Tensor chunks(const at::Tensor& flat, int parts, int first, int last) {
  const int64_t n = flat.numel(), begin = chunk_offset(n, parts, first);
  return flat.narrow(0, begin, chunk_offset(n, parts, last) - begin);
}

int mod(int a, int p) { return ((a % p) + p) % p; }

at::Tensor flat_view(const at::Tensor& t, const char* scheme) {
  if (!t.is_contiguous())
    throw CommError(std::string(scheme) + " allreduce: the tensor must be contiguous");
  return t.view({-1});
}

int index_in(const Communicator& comm, const RankGroup& group, const char* scheme) {
  const int index = group.index_of(comm.rank());
  if (index < 0 || index >= group.size || group.at(index) != comm.rank())
    throw CommError(std::string(scheme) + " allreduce: rank " + std::to_string(comm.rank()) +
                    " is not in the group it runs on");
  return index;
}

}  // namespace

void ring_allreduce(Communicator& comm, at::Tensor& t, const RankGroup& group) {
  const int p = group.size;
  if (p <= 1) return;
  const int me = index_in(comm, group, "ring");
  at::Tensor flat = flat_view(t, "ring");
  const int next = group.at(mod(me + 1, p)), prev = group.at(mod(me - 1, p));
  // Chunk 0 is the largest.
  at::Tensor buffer = at::empty({chunk_offset(flat.numel(), p, 1)}, flat.options());
  for (int s = 0; s + 1 < p; ++s) {
    const int out = mod(me - s, p), in = mod(me - s - 1, p);
    at::Tensor mine = chunks(flat, p, in, in + 1);
    at::Tensor received = buffer.narrow(0, 0, mine.numel());
    comm.sendrecv(chunks(flat, p, out, out + 1), next, received, prev, kAllreduceTag);
    mine.add_(received);
  }
  for (int s = 0; s + 1 < p; ++s) {
    const int out = mod(me + 1 - s, p), in = mod(me - s, p);
    at::Tensor received = chunks(flat, p, in, in + 1);
    comm.sendrecv(chunks(flat, p, out, out + 1), next, received, prev, kAllreduceTag);
  }
}

void halving_doubling_allreduce(Communicator& comm, at::Tensor& t, const RankGroup& group) {
  const int p = group.size;
  if (p <= 1) return;
  const int me = index_in(comm, group, "halving_doubling");
  at::Tensor flat = flat_view(t, "halving_doubling");
  int core = 1;
  while (core * 2 <= p) core *= 2;
  const int extra = p - core;
  at::Tensor buffer = at::empty_like(flat);
  // The first 2*extra ranks pair up: the odd ones hand their vector to the even ones.
  int index = me - extra;  // among the `core` ranks taking part (-1: none)
  if (me < 2 * extra) {
    if (me % 2 == 1) {
      comm.send(flat, group.at(me - 1), kAllreduceTag);
      index = -1;
    } else {
      comm.recv(buffer, group.at(me + 1), kAllreduceTag);
      flat.add_(buffer);
      index = me / 2;
    }
  }
  if (index >= 0) {
    auto rank_of = [&](int i) { return group.at(i < extra ? 2 * i : i + extra); };
    int lo = 0, hi = core;  // the chunks this rank holds
    for (int d = core / 2; d >= 1; d /= 2) {
      const int peer = rank_of(index ^ d), mid = lo + d;
      const bool keep_lower = (index & d) == 0;
      at::Tensor kept = keep_lower ? chunks(flat, core, lo, mid) : chunks(flat, core, mid, hi);
      at::Tensor sent = keep_lower ? chunks(flat, core, mid, hi) : chunks(flat, core, lo, mid);
      at::Tensor received = buffer.narrow(0, 0, kept.numel());
      comm.sendrecv(sent, peer, received, peer, kAllreduceTag);
      kept.add_(received);
      if (keep_lower)
        hi = mid;
      else
        lo = mid;
    }
    for (int d = 1; d < core; d *= 2) {
      const int peer = rank_of(index ^ d);
      const int peer_lo = (index & d) ? lo - d : hi;
      at::Tensor received = chunks(flat, core, peer_lo, peer_lo + d);
      comm.sendrecv(chunks(flat, core, lo, hi), peer, received, peer, kAllreduceTag);
      lo = std::min(lo, peer_lo);
      hi = std::max(hi, peer_lo + d);
    }
  }
  if (me < 2 * extra) {
    if (me % 2 == 0)
      comm.send(flat, group.at(me + 1), kAllreduceTag);
    else
      comm.recv(flat, group.at(me - 1), kAllreduceTag);
  }
}

void tree_reduce(Communicator& comm, at::Tensor& t, const RankGroup& group) {
  const int p = group.size;
  if (p <= 1) return;
  const int me = index_in(comm, group, "tree");
  at::Tensor flat = flat_view(t, "tree");
  const int left = 2 * me + 1, right = 2 * me + 2;
  if (left < p) {
    at::Tensor buffer = at::empty_like(flat);
    for (int child : {right, left}) {
      if (child >= p) continue;
      comm.recv(buffer, group.at(child), kAllreduceTag);
      flat.add_(buffer);
    }
  }
  if (me > 0) comm.send(flat, group.at((me - 1) / 2), kAllreduceTag);
}

void tree_broadcast(Communicator& comm, at::Tensor& t, const RankGroup& group) {
  const int p = group.size;
  if (p <= 1) return;
  const int me = index_in(comm, group, "tree");
  at::Tensor flat = flat_view(t, "tree");
  if (me > 0) comm.recv(flat, group.at((me - 1) / 2), kAllreduceTag);
  for (int child : {2 * me + 1, 2 * me + 2})
    if (child < p) comm.send(flat, group.at(child), kAllreduceTag);
}

void tree_allreduce(Communicator& comm, at::Tensor& t, const RankGroup& group) {
  tree_reduce(comm, t, group);
  tree_broadcast(comm, t, group);
}

void two_level_allreduce(Communicator& intra, Communicator& inter, at::Tensor& t,
                         int ranks_per_node) {
  const int p = intra.size();
  if (ranks_per_node < 1 || p % ranks_per_node != 0)
    throw CommError("two_level allreduce: " + std::to_string(ranks_per_node) +
                    " ranks per node do not divide the " + std::to_string(p) +
                    " ranks into equal nodes");
  const int node = intra.rank() / ranks_per_node;
  const RankGroup node_ranks{node * ranks_per_node, 1, ranks_per_node};
  tree_reduce(intra, t, node_ranks);
  if (intra.rank() % ranks_per_node == 0)
    ring_allreduce(inter, t, RankGroup{0, ranks_per_node, p / ranks_per_node});
  tree_broadcast(intra, t, node_ranks);
}

void allreduce_with(AllreduceScheme scheme, Communicator& comm, at::Tensor& t) {
  switch (scheme) {
    case AllreduceScheme::library: comm.allreduce_sum(t); return;
    case AllreduceScheme::ring: ring_allreduce(comm, t, whole(comm)); return;
    case AllreduceScheme::halving_doubling:
      halving_doubling_allreduce(comm, t, whole(comm));
      return;
    case AllreduceScheme::tree: tree_allreduce(comm, t, whole(comm)); return;
    case AllreduceScheme::two_level: break;
  }
  throw CommError("allreduce_with: two_level runs through two_level_allreduce");
}

}  // namespace cedar
