#pragma once
// The global top-k of the ranks' sparse sets (gTop-k, Shi et al., ICDCS 2019;
// algorithms/gtopk.cpp): a recursive-doubling merge through point-to-point messages, after which
// every rank holds the same set.
//
// Merge of two sets of one tensor (k pairs each, indices ascending): their union, values summed
// where the indices coincide (a + b = b + a bitwise, so both partners compute the same set), cut
// to its k largest magnitudes by the rule of magnitude_topk.h (equal magnitudes: lower index
// first). Two sets of k distinct indices have a union of at least k, so every merge keeps exactly
// k: every message has a fixed size.
//
// Schedule on P ranks, P' the largest power of two <= P:
//   fold    rank r >= P' sends its set to r − P', which merges it into its own;
//   rounds  j = 0 .. log2 P' − 1: rank r < P' exchanges its set with r XOR 2^j (one sendrecv)
//           and both keep the merge; after round j the 2^(j+1) ranks of a block hold one set;
//   unfold  rank r − P' sends the final set to r, with the delivery flags of r's entries.
// Message (native byte order): [K int32 indices][K fp32 values] = 8·K bytes, K = Σ_s k_s over
// the bucket's tensors, tensor by tensor in bucket order, indices ascending within a tensor (the
// layout of sparse_exchange.h per tensor); the unfold message appends K uint8 delivery flags
// (9·K bytes). Bytes sent per rank: 8·K·log2 P' (+ 8·K for a folded rank, + 9·K for its partner).
//
// Delivery: a rank's entry (its own value at one index) is delivered when that value is part of
// the final set: the index survived every merge on the rank's path. An index dropped at one merge
// may come back from another block's set later; the value there is then the other block's only,
// and the entry counts as not delivered.
#include <cstdint>
#include <vector>

#include "algorithms/codecs/magnitude_topk.h"

namespace cedar {

class Communicator;

// The sparse sets of the tensors of one bucket: tensor s (numel[s] elements) has count[s]
// (index, value) pairs, stored after those of tensors 0 .. s − 1, indices ascending in
// [0, numel[s]).
struct SparseSegments {
  std::vector<int64_t> numel;
  std::vector<int64_t> count;
  std::vector<int32_t> index;
  std::vector<float> value;
  int64_t total() const { return static_cast<int64_t>(index.size()); }
};

// `out` = the merge of a and b (same numel and count), tensor by tensor. `topk` and `scratch`
// are reused buffers.
struct MergeScratch {
  std::vector<int32_t> index, position;
  std::vector<float> value;
  MagnitudeTopK topk;
};
void merge_keep_topk(const SparseSegments& a, const SparseSegments& b, SparseSegments& out,
                     MergeScratch& scratch);

struct GlobalTopK {
  SparseSegments global;           // identical on every rank
  std::vector<uint8_t> delivered;  // per entry of this rank's set: 1 when its value is in global
  int64_t bytes_sent = 0;          // by this rank
  int64_t messages_sent = 0;       // by this rank (send and sendrecv calls)
};

// Collective over `comm` (the schedule above). Every rank passes sets of equal numel and count.
// A peer's set whose indices are not ascending within [0, numel) is a CommError.
GlobalTopK global_topk_allreduce(const SparseSegments& local, Communicator& comm,
                                 MergeScratch& scratch);

}  // namespace cedar
