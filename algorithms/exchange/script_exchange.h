#pragma once
// How the tensors of a Python-written compressor (codecs/script_compressor.h) travel, as its
// script declares (ScriptExchange). Every byte goes through `comm` (the metered communicator).
//
//   allgather: each gradient of the bucket is encoded (through error feedback when a memory is
//     given), this rank's payloads of the whole bucket travel in ONE allgather (their sizes follow
//     from the tensors' sizes, so every rank's are equal and no lengths travel: the payload is the
//     script's tensors' bytes, nothing else), and every rank decodes every rank's payload of each
//     gradient and averages them into entry.grad: rank 0's decoding, then each later rank's added
//     in rank order, the last addition divided by the rank count ((s + d) / P in fp32, as
//     exchange/compressed_exchange.h averages a built-in codec's decodings).
//   allreduce: the tensors of the bucket's encodings are summed over the ranks, those of one dtype
//     concatenated in order into one allreduce (one per dtype: fp32, fp64, int8, uint8, int32,
//     int64); each gradient's summed tensors are decoded once and the decoding divided by the rank
//     count. Linear codecs only: the decoding of a sum must be the sum of the decodings.
// The script receives the tensors' parameter names and the generator `gen`, in bucket order.
#include "algorithms/algorithm.h"
#include "algorithms/codecs/script_compressor.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "algorithms/exchange/error_feedback.h"

namespace cedar {

class Communicator;

// payload_bytes: this rank's encoded bytes of the bucket (the script's tensors).
ExchangeResult exchange_scripted(GradBucket& bucket, Communicator& comm, ScriptCompressor& codec,
                                 ErrorFeedback* memory, at::Generator& gen);

}  // namespace cedar
