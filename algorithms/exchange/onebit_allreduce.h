#pragma once
// The compressed allreduce of 1-bit Adam (Tang et al., ICML 2021, Algorithm 1 lines 5-10; the
// compressed_allreduce of DeepSpeed's deepspeed/runtime/comm/): error-compensated 1-bit compression
// in two stages, worker and server, with the server's work spread over the ranks: rank j is the
// server of chunk j of every tensor.
//
// The compressor: C(x) = (‖x‖₂/√L)·sign(x) for a vector x of L elements (the scale makes ‖C(x)‖₂ =
// ‖x‖₂), sign(0) = +1 (one bit cannot carry 0; NaN gives −1); the scale is the fp32 rounding of
// √(Σ x² / L) summed in fp64 (0 when L = 0).
//
// Per tensor of d elements on n ranks; rank i keeps a worker error e_i (d values, from 0) and a
// server error ē_i for its own chunk (from 0):
//   worker i:  p_i = x_i + e_i;  s_i = ‖p_i‖₂/√d;  e_i ← p_i − s_i·sign(p_i)
//   chunks:    c = 8·⌈d / 8n⌉ elements; chunk j = [j·c, min((j + 1)·c, d)), of L_j elements (0 for
//              the last ranks of a short tensor); c is a multiple of 8, so chunks start on bytes
//   server j:  y = (Σ_i s_i·sign(p_i)[chunk j]) / n, summed in rank order;  q = y + ē_j;
//              σ_j = ‖q‖₂/√L_j;  ē_j ← q − σ_j·sign(q)
//   result:    x[chunk j] = σ_j·sign(q) on every rank, for every j.
// Summed over steps nothing is lost: Σ_t x̄_t = (1/n)·Σ_i Σ_t x_i,t − (1/n)·Σ_i e_i − ē, with ē the
// ranks' server errors laid out as their chunks.
//
// Wire format, per bucket of K tensors (d_1..d_K, chunk lengths c_1..c_K): every message has
//   S = 4·K + Σ_k c_k/8 bytes: K fp32 scales (host byte order, tensor order), then per tensor the
//   c_k/8 bytes of one chunk's sign bits (bit_packing.h, least significant bit first, 1 for
//   ≥ 0; bits past the tensor's end are 0).
//   phase 1, worker → server: n − 1 sendrecvs; in round r = 1..n−1 rank i sends its scales and the
//     bits of chunk (i + r) mod n to rank (i + r) mod n, and receives from rank (i − r) mod n.
//   phase 2, server → every rank: one allgather of each rank's message (its σ's, its chunk's bits).
// Bytes per bucket and rank: payload (n − 1)·S + S = n·S; bus bytes (n − 1)·S + (n − 1)·S =
// 2(n − 1)·S. A dense fp32 allreduce of the same D = Σ d_k values: payload 4·D, bus 2(n − 1)/n·4·D;
// with S ≈ D/8n both ratios approach 32. With n = 1 nothing is sent and both stages still compress.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace cedar {

class Communicator;

// One tensor's error memories on this rank (undefined until the first exchange creates them as
// zeros): the worker error of the whole tensor and the server error of this rank's chunk.
struct OnebitErrors {
  at::Tensor worker;
  at::Tensor server;
};

// c = 8·⌈d / 8n⌉: the chunk length of a tensor of d elements on n ranks.
int64_t onebit_chunk_elements(int64_t d, int n);
// Chunk j's first element and element count (count 0 past the tensor's end).
struct OnebitChunk {
  int64_t begin = 0;
  int64_t count = 0;
};
OnebitChunk onebit_chunk(int64_t d, int n, int j);
// S: the bytes of every message of a bucket of tensors of `numels` elements on n ranks.
int64_t onebit_message_bytes(const std::vector<int64_t>& numels, int n);

// Replaces every x[k] (fp32, contiguous, any shape; on comm.device()) by the compressed average of
// the ranks' x[k] above; errors[k] are tensor k's memories on this rank, updated in place (created
// on the first call). Every rank must pass tensors of the same shapes in the same order.
void onebit_allreduce(const std::vector<at::Tensor>& x, const std::vector<OnebitErrors*>& errors,
                      Communicator& comm);

}  // namespace cedar
