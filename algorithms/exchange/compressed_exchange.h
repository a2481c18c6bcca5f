#pragma once
// The exchange every allgather-based compressor shares: each gradient of the bucket is encoded
// (through error feedback when a memory is given), all encodings of the bucket travel in ONE
// allgather (fixed-size encodings) or allgatherv (data-dependent sizes, preceded by one int64
// length per tensor), and every rank decodes every rank's encoding and combines them into
// entry.grad (the average, unless a custom combine is given).
#include <functional>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/exchange/error_feedback.h"

namespace cedar {

class Communicator;

// Turns the per-rank decoded tensors of one gradient into the update written to entry.grad.
using Combine = std::function<at::Tensor(const std::vector<at::Tensor>& decoded)>;
at::Tensor combine_average(const std::vector<at::Tensor>& decoded);

struct ExchangeResult {
  int64_t payload_bytes = 0;  // this rank's encoded bytes (headers included)
};

// Without a combine (an empty one) entry.grad receives the average, combine_average's result bit
// for bit, decoded in place: rank 0's decoding straight into entry.grad (when it is contiguous CPU
// fp32), the other ranks' added to it in rank order, then divided by the rank count.
ExchangeResult exchange_compressed(GradBucket& bucket, Communicator& comm, Compressor& compressor,
                                   ErrorFeedback* memory, at::Generator& gen,
                                   const Combine& combine = Combine());

}  // namespace cedar
