#pragma once
// One worker of a parameter-server run (runner/ps/protocol.h): computes a gradient on the
// parameters it last pulled, pushes each server its shard of it, and takes the servers' replies as
// its new parameters, until a server says stop; then it tells every server it leaves. When every
// server says checkpoint instead (while it waits for their replies), it writes its own and then
// takes the replies.
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "comm/metered_communicator.h"
#include "runner/ps/layout.h"

namespace cedar {

struct PsWorkerStep {
  double loss_sum = 0, correct = 0, count = 0;
  std::vector<at::Tensor> grads;  // one per parameter, model order
  bool upload = true;  // false (LAG's rule): push nothing (an empty message); the server reuses
                       // the worker's last upload
};

struct PsWorkerHooks {
  // The gradient of step `step` at the current parameters.
  std::function<PsWorkerStep(int64_t step)> compute;
  // After the step's pushes, before the replies (the step's traffic is in comm.step()).
  std::function<void(const PsWorkerStep&, int64_t step)> after_push;
  // Every server asked for the checkpoint of `version` while this worker waits for the replies
  // to its push of step `steps` - 1; `code` (kCheckpoint, kCheckpointWait or kCheckpointStop)
  // says what follows, and a resumed worker is handed it back.
  std::function<void(int64_t version, int64_t steps, int64_t code)> checkpoint;
};

// Where a resumed worker takes up: its pushes so far and what the servers owe it.
struct PsWorkerResume {
  int64_t steps = 0;
  int64_t version = 0;  // of the checkpoint
  int64_t code = 0;     // the checkpoint's ReplyCode
};

class PsWorker {
 public:
  // `params`: the model's parameters in model order, overwritten by each reply.
  PsWorker(MeteredCommunicator& comm, const PsLayout& layout, std::vector<at::Tensor> params,
           PsWorkerHooks hooks)
      : comm_(comm), layout_(layout), params_(std::move(params)), hooks_(std::move(hooks)) {}
  // Trains until a server says stop and returns the stop code (ps_protocol.h's ReplyCode).
  // `resume`: a resumed worker, which first takes what the checkpoint left due.
  int64_t run(const PsWorkerResume* resume = nullptr);
  int64_t steps() const { return steps_; }  // pushed so far

 private:
  MeteredCommunicator& comm_;
  const PsLayout& layout_;
  std::vector<at::Tensor> params_;
  PsWorkerHooks hooks_;
  int64_t steps_ = 0;
};

}  // namespace cedar
