#pragma once
// The parameter server's messages. Every message goes through the run's metered communicator,
// so its bytes are counted as the sender's (comm/metered_communicator.h):
//   push    worker -> server: a header of 4 int64 (kind, the worker's step, the server version it
//           computed on, the stop signal the worker received or 0) with tag kPushHeaderTag,
//           received from any worker (recv_any_up_to); then, for kind kGradient, the gradient of
//           the server's shard (fp32, shard elements) with tag kPushBodyTag.
//           A skipped upload (LAG: the rule says skip) is an empty message with tag
//           kPushHeaderTag: no bytes at all, one message, because a synchronous server must still
//           learn that the round is complete; the server reuses the worker's last gradient.
//           kind kLeaving ends the worker's part in the run (no body); its last word is the stop
//           code of the reply that ended it (a server other than 0 may have stopped the run).
//   pull    server -> worker: a header of 2 int64 (the shard's version, a ReplyCode) with tag
//           kReplyHeaderTag; for kContinue, the shard's parameters (fp32) follow with tag
//           kReplyBodyTag. At a checkpoint (every worker waits for its reply) the header's code
//           says so: each rank writes its checkpoint, then the body follows (kCheckpoint), or,
//           for an ssp worker that must go on waiting, a whole reply follows later
//           (kCheckpointWait: the only message a checkpoint adds); after a signal the run stops
//           there instead (kCheckpointStop, kCheckpointStopWait). A resumed server starts by
//           sending what the checkpoint left due, as if the run had not stopped.
// So a worker's step costs, per server s with n_s elements, 32 + 4 n_s bytes sent (0 when LAG
// skips) and 16 + 4 n_s bytes received; a server sends 16 + 4 n_s bytes per push it answers,
// whether or not checkpoints are written.
// The workers' step statistics (loss, counts, their metered traffic) go to rank 0 over the
// run's unmetered control channel (kStatsTag), followed in the same message by the worker's
// buffers after the step (batch-norm statistics, runner/ps/worker_buffers.h; none for LeNet-5):
// harness bookkeeping for rank 0's evaluations, not training traffic, as the all-reduce
// trainer's averaging of the ranks' buffers before an evaluation goes over its control channel.
#include <cstdint>

namespace cedar {

constexpr int kPushHeaderTag = 0x5001;
constexpr int kPushBodyTag = 0x5002;
constexpr int kReplyHeaderTag = 0x5003;
constexpr int kReplyBodyTag = 0x5004;
constexpr int kStatsTag = 0x5005;
constexpr int kShardTag = 0x5006;      // servers -> rank 0 (control): a shard's header
constexpr int kShardBodyTag = 0x5007;  // and the shard, for rank 0's evaluation

constexpr int64_t kPushHeaderWords = 4;
constexpr int64_t kReplyHeaderWords = 2;

enum PushKind : int64_t { kGradient = 0, kLeaving = 2 };

// The second word of a reply header. The stop codes say why the run ends.
enum ReplyCode : int64_t {
  kContinue = 0,
  kStopCompleted = 1,       // the budget of updates is applied
  kCheckpoint = 2,          // write a checkpoint; then this reply's body follows
  kStopDiverged = 3,        // a server's parameters or the evaluated model are not finite
  kStopInterrupted = 4,     // a rank received SIGINT / SIGTERM
  kCheckpointWait = 5,      // write a checkpoint; a whole reply follows later (ssp's bound)
  kCheckpointStop = 6,      // kCheckpoint, but the run stops there (kStopInterrupted)
  kCheckpointStopWait = 7,  // kCheckpointWait, but the run stops there
};
inline bool is_stop(int64_t code) {
  return code == kStopCompleted || code == kStopDiverged || code == kStopInterrupted;
}
inline bool is_checkpoint(int64_t code) {
  return code == kCheckpoint || code == kCheckpointWait || code == kCheckpointStop ||
         code == kCheckpointStopWait;
}
// What a resumed worker is owed after checkpoint `code`: kCheckpoint (the body) or
// kCheckpointWait (a whole reply).
inline int64_t resumed_code(int64_t code) {
  return code == kCheckpointStop ? kCheckpoint
                                 : (code == kCheckpointStopWait ? kCheckpointWait : code);
}

// A worker's step as rank 0 records it (kStatsTag, kStatsWords doubles, in this order, then
// WorkerBuffers::words() doubles of its buffers).
struct WorkerStepStats {
  double loss_sum = 0, correct = 0, count = 0;
  double compute_seconds = 0, comm_seconds = 0;
  double payload_bytes = 0, bus_bytes = 0, latency_steps = 0;
  double epoch = 0;  // the worker's own epoch (its loader's)
};
constexpr int64_t kStatsWords = 9;

}  // namespace cedar
