#pragma once
// When a parameter-server run writes checkpoints and how its ranks commit one. The servers decide
// (runner/ps/server.h): a checkpoint is due at every epoch boundary counted in applied
// updates and every train.checkpoint_every_steps updates, and at a signal. Each rank writes its
// own file (runner/train/checkpoint.h) while every worker waits for its reply (a worker's holds
// its batch-norm statistics, rank 0's the latest of every worker: runner/ps/worker_buffers.h);
// then, collectively on the control channel, rank 0 records the checkpoint as the latest.
//
// bsp resumes bitwise: a checkpoint is taken at the end of a round, where every worker has pushed
// and waits, so the resumed run takes the same rounds. ssp and asp resume from a consistent
// snapshot: the server's state once every worker's last gradient is applied and every reply is
// held back; but which gradient arrives first after it depends on timing, so the resumed run's
// order of updates (and its numbers) differ from the uninterrupted run's, as two uninterrupted
// asynchronous runs differ from each other.
#include <cstdint>

#include "comm/communicator.h"
#include "runner/train/checkpoint.h"

namespace cedar {

struct PsCheckpointPlan {
  const CheckpointDir* dir = nullptr;  // null: no checkpoints
  int64_t every = 0;                   // updates between checkpoints (0: epoch boundaries only)
  int64_t updates_per_epoch = 1;

  bool enabled() const { return dir != nullptr; }
  bool due(int64_t version) const {
    return version % updates_per_epoch == 0 || (every > 0 && version % every == 0);
  }
  // Writes this rank's state as checkpoint `version`; then, collective on `control`, rank 0
  // makes it the latest once every rank has written.
  void write(int64_t version, const TensorMap& state, Communicator& control) const;
};

}  // namespace cedar
