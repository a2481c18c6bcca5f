#pragma once
// One worker of a parameter-server run (runner/train/ps_protocol.h): computes a gradient on the
// parameters it last pulled, pushes each server its shard of it, and takes the servers' replies as
// its new parameters, until a server says stop; then it tells every server it leaves.
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "comm/metered_communicator.h"
#include "runner/train/ps_layout.h"

namespace cedar {

struct PsWorkerStep {
  double loss_sum = 0, correct = 0, count = 0;
  std::vector<at::Tensor> grads;  // one per parameter, model order
  bool upload = true;  // false (LAG's rule): push the header only; the server reuses the last
};

struct PsWorkerHooks {
  // The gradient of step `step` at the current parameters.
  std::function<PsWorkerStep(int64_t step)> compute;
  // After the step's pushes, before the replies (the step's traffic is in comm.step()).
  std::function<void(const PsWorkerStep&, int64_t step)> after_push;
};

class PsWorker {
 public:
  // `params`: the model's parameters in model order, overwritten by each reply.
  PsWorker(MeteredCommunicator& comm, const PsLayout& layout, std::vector<at::Tensor> params,
           PsWorkerHooks hooks)
      : comm_(comm), layout_(layout), params_(std::move(params)), hooks_(std::move(hooks)) {}
  // Trains until a server says stop; returns the steps computed (the last one's gradient may
  // arrive after the stop and not be applied).
  int64_t run();

 private:
  MeteredCommunicator& comm_;
  const PsLayout& layout_;
  std::vector<at::Tensor> params_;
  PsWorkerHooks hooks_;
};

}  // namespace cedar
