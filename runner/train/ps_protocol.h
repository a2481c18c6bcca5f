#pragma once
// The parameter server's messages. Every message goes through the run's metered communicator,
// so its bytes are counted as the sender's (comm/metered_communicator.h):
//   push    worker -> server: a header of 4 int64 (kind, the worker's step, the server version it
//           computed on, 0) with tag kPushHeaderTag, received from any worker (recv_any); then,
//           for kind kGradient, the gradient of the server's shard (fp32, shard elements) with
//           tag kPushBodyTag. kind kSkipped (LAG: the rule says skip) has no body: the server
//           reuses the worker's last gradient, so a skipped upload costs the header alone.
//           kind kLeaving ends the worker's part in the run (no body).
//   pull    server -> worker: a header of 2 int64 (the shard's version after the update, stop)
//           with tag kReplyHeaderTag; unless stop, the shard's parameters (fp32) with tag
//           kReplyBodyTag.
// So a worker's step costs, per server s with n_s elements, 32 + 4 n_s bytes sent and
// 16 + 4 n_s bytes received; a server sends 16 + 4 n_s bytes per applied push it answers.
// The workers' step statistics (loss, counts, their metered traffic) go to rank 0 over the
// run's unmetered control channel (kStatsTag): harness bookkeeping, not training traffic.
#include <cstdint>

namespace cedar {

constexpr int kPushHeaderTag = 0x5001;
constexpr int kPushBodyTag = 0x5002;
constexpr int kReplyHeaderTag = 0x5003;
constexpr int kReplyBodyTag = 0x5004;
constexpr int kStatsTag = 0x5005;
constexpr int kShardTag = 0x5006;  // servers -> rank 0 (control): shards for evaluation

constexpr int64_t kPushHeaderWords = 4;
constexpr int64_t kReplyHeaderWords = 2;

enum PushKind : int64_t { kGradient = 0, kSkipped = 1, kLeaving = 2 };

// A worker's step as rank 0 records it (kStatsTag, kStatsWords doubles, in this order).
struct WorkerStepStats {
  double loss_sum = 0, correct = 0, count = 0;
  double compute_seconds = 0, comm_seconds = 0;
  double payload_bytes = 0, bus_bytes = 0, latency_steps = 0;
  double epoch = 0;  // the worker's own epoch (its loader's)
};
constexpr int64_t kStatsWords = 9;

}  // namespace cedar
