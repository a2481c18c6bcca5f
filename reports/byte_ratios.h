#pragma once
// The two ratios against dense SGD that reports print and claims name. No LibTorch here.
//   payload compression = dense fp32 payload ÷ the run's payload (what a rank contributes to its
//                         collectives) — the papers' definition;
//   wire ratio          = dense SGD's bus bytes at the same world size (a ring allreduce,
//                         2(P−1)/P × the dense payload) ÷ the run's bus bytes — what the network
//                         carries. An allgather makes every rank receive the other P−1 payloads,
//                         so allgather methods' wire ratio falls below their payload compression
//                         as P grows (fp16 at P = 4: 2× the payload, 1× the wire).
// Both are 0 where nothing was sent (one rank sends nothing).
#include "comm/bus_bytes.h"

namespace cedar {

inline double payload_compression(double dense_payload_bytes, double payload_bytes) {
  return payload_bytes > 0 ? dense_payload_bytes / payload_bytes : 0;
}

inline double wire_ratio(double dense_payload_bytes, double bus_bytes, int world) {
  return bus_bytes > 0 ? allreduce_busbw_factor(world) * dense_payload_bytes / bus_bytes : 0;
}

}  // namespace cedar
