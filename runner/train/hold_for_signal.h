#pragma once
// A point where a run waits for a signal, for tests that interrupt or kill a run at a step it has
// provably reached and not finished (instead of racing the machine's speed). Off unless the
// environment asks for it:
//   CEDAR_HOLD_AFTER_STEP=N   after step N is complete (its rows handed to the store, its
//                             checkpoint written when one is due) every rank holds
//   CEDAR_HOLD_FILE=PREFIX    ... and writes its pid into PREFIX.rank<R> once holding
// A held rank continues when it receives SIGINT or SIGTERM (the training loop then stops at the
// next step, as it would have), or never, until it is killed. With CEDAR_HOLD_FILE a rank holds
// once: where its file already exists (a requeued job, the suite's next run) it does not hold.
#include <cstdint>

namespace cedar {

// True when CEDAR_HOLD_AFTER_STEP asks rank `rank` to hold once `completed_steps` steps are
// complete (and it has not held before, see above).
bool hold_requested_after(int64_t completed_steps, int rank);
// Writes the pid file (CEDAR_HOLD_FILE) and waits for SIGINT or SIGTERM.
void hold_for_signal(int rank);

}  // namespace cedar
