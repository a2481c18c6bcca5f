#pragma once
// Allreduce-sum built on a Communicator's point-to-point messages (send, recv, sendrecv), as the
// surveys list its logical schemes (Tang et al., "Communication-Efficient Distributed Deep
// Learning: A Comprehensive Survey"; Ouyang et al., "Communication optimization strategies for
// distributed deep neural network training: A survey"). Costs: comm/network_model.h.
//
// Each works in place on a contiguous tensor of any dtype among the ranks of a RankGroup of the
// communicator (the whole communicator by default), every message with kAllreduceTag.
//
// Chunks: the n elements split into `parts` consecutive chunks, chunk c holding
// floor(n/parts) elements plus one when c < n mod parts (so a count below `parts` leaves the last
// chunks empty; an empty chunk still travels, as a message of no bytes).
//
//   ring              reduce-scatter then allgather, P-1 steps each: at step s rank r sends chunk
//                     (r-s) mod P to r+1 and adds chunk (r-s-1) mod P from r-1 to its own; chunk c
//                     is summed x_c + x_{c+1} + ... + x_{c-1}, left to right; then the reduced
//                     chunks go round.
//   halving_doubling  Rabenseifner's (Thakur, Rabenseifner & Gropp 2005): with P' the largest
//                     power of two <= P and q = P - P', among the first 2q ranks each odd rank
//                     sends its vector to the even rank below, which adds it and takes part; the
//                     P' taking part halve their data recursively (distance P'/2 first: the rank
//                     whose bit of that distance is 0 keeps the lower half of the chunks it holds
//                     and adds the partner's copy of it), so rank i of them ends with chunk i; then
//                     double it back (distance 1 first); last, each even rank of the first 2q sends
//                     the result to its odd neighbour.
//   tree              binary tree on heap indices (parent (i-1)/2, children 2i+1, 2i+2): each rank
//                     adds its right child's subtree sum, then its left's, and sends the sum up;
//                     rank 0 ends with the total and it travels down, left child first.
//   two_level         nodes of R consecutive ranks: tree reduce inside each node to its first
//                     rank (the leader), ring allreduce among the leaders, tree broadcast inside
//                     each node. Its two levels' messages go through two communicators (the same
//                     ranks, each counted and emulated as its level).
#include <ATen/core/Tensor.h>

#include "comm/communicator.h"
#include "comm/network_model.h"

namespace cedar {

inline constexpr int kAllreduceTag = 0xa11;

// The ranks first, first + stride, ..., first + (size-1)*stride of a communicator, numbered 0..
struct RankGroup {
  int first = 0, stride = 1, size = 1;
  int at(int index) const { return first + index * stride; }
  int index_of(int rank) const { return (rank - first) / stride; }
};
inline RankGroup whole(const Communicator& comm) { return {0, 1, comm.size()}; }

void ring_allreduce(Communicator& comm, at::Tensor& t, const RankGroup& group);
void halving_doubling_allreduce(Communicator& comm, at::Tensor& t, const RankGroup& group);
// Reduce to the group's index 0 (the other ranks keep their subtree's partial sum), and its
// broadcast from index 0.
void tree_reduce(Communicator& comm, at::Tensor& t, const RankGroup& group);
void tree_broadcast(Communicator& comm, at::Tensor& t, const RankGroup& group);
void tree_allreduce(Communicator& comm, at::Tensor& t, const RankGroup& group);
// `intra` carries the messages inside a node, `inter` those between leaders. Throws CommError
// unless ranks_per_node divides the ranks.
void two_level_allreduce(Communicator& intra, Communicator& inter, at::Tensor& t,
                         int ranks_per_node);

// ring, halving_doubling or tree over the whole of `comm`; library calls comm.allreduce_sum;
// two_level throws CommError (it needs two_level_allreduce's arguments).
void allreduce_with(AllreduceScheme scheme, Communicator& comm, at::Tensor& t);

}  // namespace cedar
