#pragma once
// The sparse (index, value) encoding shared by the sparsifying algorithms (DGC, top-k, random-k)
// and its compressor base: a selection of coordinates, encoded with their values.
//
// Format of one encoding of n selected coordinates (native byte order, no header):
//   [ n int32 indices, ascending ][ n fp32 values ]          =  8·n bytes  (sparse_payload_bytes)
// The count is implied by the length (bytes / 8). Indices are int32, so a tensor (or the joint
// index space of several tensors, see scatter_add_segments in exchange/sparse_exchange.h) must
// hold fewer than 2^31 elements. A values-only encoding ([ n fp32 values ] = 4·n bytes) is used
// when every rank knows the index set already (random-k with a shared seed, randomk_codec.h).
#include <cstdint>
#include <utility>

#include "algorithms/codecs/compressor.h"

namespace cedar {

constexpr int64_t kSparseBytesPerEntry = 8;  // int32 index + fp32 value
inline int64_t sparse_payload_bytes(int64_t nnz) { return kSparseBytesPerEntry * nnz; }

// k = ⌈numel·fraction⌉ clamped to [1, numel] (0 for an empty tensor); the tiny tolerance keeps
// products such as 1000·0.001 from rounding up to 2.
int64_t keep_count(int64_t numel, double fraction);

// Encodes `values` (fp32) at `indices` (any integer type, < 2^31) into 8·n bytes.
at::Tensor encode_sparse(const at::Tensor& indices, const at::Tensor& values);

struct SparseView {
  at::Tensor indices;  // int64, as encoded
  at::Tensor values;   // fp32
};
// Splits an 8·n-byte encoding back into indices and values; throws if the length is not 8·n.
SparseView decode_sparse(const at::Tensor& payload);

// The checks the decoders share, each throwing std::invalid_argument naming `who`:
// the pairs of a payload on any device, its indices strictly ascending within [0, numel) (one
// synchronisation off the CPU);
SparseView checked_sparse_pairs(const at::Tensor& payload, int64_t numel, const char* who);
// the bytes of a 1-D uint8 CPU payload;
const uint8_t* cpu_payload_bytes(const at::Tensor& payload, const char* who);
// the bytes and the pair count of a CPU payload of whole 8-byte pairs (`c` keeps them alive).
std::pair<const uint8_t*, int64_t> cpu_sparse_pairs(const at::Tensor& payload, at::Tensor& c,
                                                    const char* who);

// A compressor that keeps a subset of coordinates: compress = encode(select(x), x[select(x)]),
// decompress = scatter into zeros. Subclasses define the selection (topk_codec.h,
// randomk_codec.h, and algorithms that select by a rule of their own).
class SparseCompressor : public Compressor {
 public:
  // Indices (int64, ascending, distinct) of the coordinates of 1-D fp32 `x` to keep.
  virtual at::Tensor select(const at::Tensor& x, at::Generator& gen) = 0;
  at::Tensor compress(const at::Tensor& x, at::Generator& gen) override;
  // Decoding writes zeros and the payload's values in one pass over the output. The payload may
  // come from a peer: its indices must be strictly ascending within [0, numel), as every encoder
  // writes them, or std::invalid_argument is thrown (decompress_into's `out` then holds part of
  // the values).
  at::Tensor decompress(const at::Tensor& payload, int64_t numel) override;
  void decompress_into(const at::Tensor& payload, at::Tensor& out) override;
  // x[i] -= v for the payload's (i, v): the other coordinates are left as they are (x - 0).
  void subtract_decoded(const at::Tensor& payload, at::Tensor& x, at::Tensor& scratch) override;
};

}  // namespace cedar
