// Local SGD (Stich, "Local SGD Converges Fast and Communicates Little", ICLR 2019) and post-local
// SGD (Lin, Stich, Patel, Jaggi, "Don't Use Large Mini-Batches, Use Local SGD", ICLR 2020).
//
// Local phase: every worker applies its own gradient (reduce_gradients communicates nothing) and,
// after every H-th local step, the models are averaged with ONE fused allreduce of all parameters
// (optionally also the optimizer's momentum buffers and the floating-point batch-norm statistics,
// in the same allreduce when their dtype matches). Post-local SGD: before the switch step the
// gradients are allreduce-averaged every step (dense S-SGD); local SGD from the switch on, with the
// H-step period counted from the switch.
// Bytes: one model-sized allreduce (4 bytes per parameter, + the averaged buffers) every H local
// steps; a dense gradient allreduce per step before the switch.
//
// Hyper-parameters:
//   period (16)                   H, local steps between model averages. The authors' released
//                                 ResNet-20 / CIFAR-10 post-local SGD examples use H = 16 and 32.
//                                 H = 1 averaging parameters (and momentum, when on) is
//                                 mini-batch SGD up to rounding.
//   post_local_switch_epoch (-1)  epoch from which local steps are taken: < 0 = the first step
//                                 decay of the learning rate (post-local SGD; local from the start
//                                 when the schedule has no step decay), 0 = local SGD throughout.
//   average_momentum (false)      also average the momentum buffers at each sync (the authors'
//                                 code averages parameters only).
//   average_bn (false)            also average floating-point buffers (batch-norm running
//                                 statistics) at each sync.
#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "comm/average.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct LocalSgdParams {
  int64_t period = 16;
  double post_local_switch_epoch = -1;
  bool average_momentum = false;
  bool average_bn = false;
  template <class V>
  void visit(V& v) {
    v("period", period, "H: local steps between model averages", at_least(1));
    v("post_local_switch_epoch", post_local_switch_epoch,
      "epoch from which steps are local (-1: first lr step decay, 0: from the start)",
      at_least(-1));
    v("average_momentum", average_momentum, "also average momentum buffers at each sync");
    v("average_bn", average_bn, "also average floating-point buffers (BN statistics) at each sync");
  }
};

class LocalSgd final : public Algorithm {
 public:
  explicit LocalSgd(const LocalSgdParams& p) : p_(p) {}

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    if (ctx.step >= switch_step(ctx)) return;  // local phase: keep the local gradient
    comm.allreduce_sum(bucket.flat);
    bucket.flat.div_(static_cast<double>(comm.size()));
  }

  void after_step(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>& buffers,
                  Communicator& comm, StepContext& ctx) override {
    const int64_t start = switch_step(ctx);
    ctx.stats["local_phase"] = ctx.step >= start ? 1.0 : 0.0;
    if (ctx.step < start || (ctx.step - start + 1) % p_.period != 0) {
      ctx.stats["model_averaged"] = 0;
      return;
    }
    std::vector<at::Tensor> tensors;
    for (const auto& p : params) tensors.push_back(p.tensor);
    if (p_.average_momentum && ctx.momentum_buffers)
      for (const auto& b : *ctx.momentum_buffers)
        if (b.defined()) tensors.push_back(b);
    if (p_.average_bn)
      for (const auto& b : buffers)
        if (b.tensor.is_floating_point()) tensors.push_back(b.tensor);
    average_in_place(tensors, comm);
    ctx.stats["model_averaged"] = 1;
  }

 private:
  // First step of the local phase.
  int64_t switch_step(const StepContext& ctx) const {
    double epoch = p_.post_local_switch_epoch;
    if (epoch < 0) epoch = ctx.first_decay_epoch >= 0 ? ctx.first_decay_epoch : 0;
    return static_cast<int64_t>(std::ceil(epoch * static_cast<double>(ctx.steps_per_epoch)));
  }

  LocalSgdParams p_;
};

}  // namespace

AlgorithmInfo local_sgd_algorithm() {
  AlgorithmInfo info = algorithm_info<LocalSgd, LocalSgdParams>(
      "local-sgd",
      "local SGD / post-local SGD: H local steps, then one fused allreduce averaging the model "
      "(dense gradient allreduce before the switch epoch)",
      "Stich, ICLR 2019; Lin, Stich, Patel, Jaggi, ICLR 2020");
  info.device_independent = true;
  info.acts_after_step = true;
  info.elementwise_exchange = true;  // allreduce-averages each element, or sends nothing
  // Averaging parameters and momentum after every step: the sums differ in order only.
  info.lossless = {{"{period: 1, post_local_switch_epoch: 0, average_momentum: true}", 1e-4}};
  return info;
}

}  // namespace cedar
