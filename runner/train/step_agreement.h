#pragma once
// What the ranks agree on after every training step, so that each of them logs the same
// statistics and takes the same decision (go on, stop, diverge) at the same step. One allgather
// on the unmetered control channel; it is harness bookkeeping, not the algorithm's traffic.
#include <cstdint>

#include "comm/communicator.h"

namespace cedar {

// One rank's account of the step it just took.
struct StepReport {
  double loss_sum = 0;          // the batch's mean loss times its size
  double correct = 0;           // correctly classified images of the batch
  double count = 0;             // images in the batch
  int64_t payload_bytes = 0;    // bytes this rank sent in the step
  int stop_signal = 0;          // SIGINT/SIGTERM received (0: none)
  int64_t nonfinite_param = 0;  // first parameter with a NaN/Inf update, as index + 1 (0: none)
};

// The same on every rank.
struct StepAgreement {
  double loss_sum = 0;        // sum over ranks
  double correct = 0;         // sum over ranks
  double count = 0;           // sum over ranks
  int64_t payload_bytes = 0;  // sum over ranks
  // The stop signal of the lowest rank that received one (0: no rank stops).
  int stop_signal = 0;
  // The lowest rank with a non-finite update (-1: none) and that rank's nonfinite_param.
  int nonfinite_rank = -1;
  int64_t nonfinite_param = 0;
};

// Collective: every rank of `control` calls it once per step, in the same order as its other
// collectives on `control`.
StepAgreement agree_on_step(Communicator& control, const StepReport& mine);

// fp16 loss scaling (train.amp: fp16): true when any rank's unscaled gradients hold inf/NaN, so
// that every rank skips the same steps. It is a second collective on `control`, made only by fp16
// runs, between backward and the exchange: agree_on_step comes after the exchange and the update,
// too late to keep a non-finite gradient out of the algorithms' state (error-feedback memories,
// momentum) and out of the parameters.
bool any_rank_overflowed(Communicator& control, bool mine);

}  // namespace cedar
