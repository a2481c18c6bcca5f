#pragma once
// The exchange every allgather-based compressor shares: each gradient of the bucket is encoded
// (through error feedback when a memory is given), all encodings of the bucket travel in ONE
// allgather (fixed-size encodings) or allgatherv (data-dependent sizes, preceded by one int64
// length per tensor), and every rank decodes every rank's encoding and combines them into
// entry.grad: their average, or their majority vote.
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/compressor.h"
#include "algorithms/exchange/error_feedback.h"

namespace cedar {

class Communicator;

// How the ranks' decoded tensors of one gradient become the update written to entry.grad. Both
// sum the decodings in rank order into entry.grad (rank 0's decoded straight into it when it is
// contiguous fp32, each other rank's into one reused buffer, then added; on entry.grad's device,
// by the codecs' device-generic forms off the CPU), then:
enum class Combine {
  kAverage,   // divide by the rank count
  kMajority,  // take the sign (signSGD's majority vote: sign of the sum of the signs, 0 on a tie)
};

struct ExchangeResult {
  int64_t payload_bytes = 0;  // this rank's encoded bytes (headers included)
};

// Factors applied on the way in and out (EF-signSGD's step size): what is encoded is the
// gradient times `input` (with error feedback e + g·input, in the memory's pass), and the
// combination is divided by `output` before it is written. 1 leaves each out; either way the bits
// are those of multiplying the gradient and dividing the result as separate fp32 operations.
struct ExchangeScaling {
  float input = 1.0f;
  float output = 1.0f;
};

// `encode`, when not empty, holds one tensor per entry (of the entry's element count) that is
// encoded in place of the entry's gradient (signSGD's momentum); the combination is still written
// to entry.grad. The entries' gradients are left as they were until the combination overwrites
// them (with a scaling too).
ExchangeResult exchange_compressed(GradBucket& bucket, Communicator& comm, Compressor& compressor,
                                   ErrorFeedback* memory, at::Generator& gen,
                                   Combine combine = Combine::kAverage,
                                   const std::vector<at::Tensor>& encode = {},
                                   ExchangeScaling scaling = {});

}  // namespace cedar
