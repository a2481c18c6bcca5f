// 1-bit Adam — Tang, Gan, Awan, Rajbhandari, Li, Lian, Liu, Zhang, He, "1-bit Adam: Communication
// Efficient Large-Scale Training with Adam's Convergence Speed", ICML 2021 (Algorithm 1). Reference
// code: DeepSpeed, deepspeed/runtime/fp16/onebit/adam.py (OnebitAdam) and the compressed allreduce
// of deepspeed/runtime/comm/.
//
// Rule, per parameter tensor; t counts the tensor's steps from 1, γ is optimizer.lr's schedule:
//   warm-up, t ≤ T_w (freeze_step): Adam on the workers' average gradient, exchanged dense
//     ḡ = (1/n)·Σ_i g_i                          (one fp32 allreduce per bucket, as dense)
//     m ← β1·m + (1 − β1)·ḡ;   v ← β2·v + (1 − β2)·ḡ²
//     u = (m / c1) / (√v / √c2 + ε),   c1 = 1 − β1^t, c2 = 1 − β2^t
//   compression, t > T_w: v stays v_{T_w} (the paper's finding: Adam's variance settles early and
//   serves as a fixed preconditioner); each worker's momentum takes its own gradient
//     m_i = β1·m + (1 − β1)·g_i                   (m: the last step's common momentum)
//     m̄ = compressed allreduce of the m_i         (exchange/onebit_allreduce.h: 1-bit signs and
//                                                  one scale per tensor and chunk, worker and
//                                                  server error feedback)
//     m ← m̄ on every rank                         (Algorithm 1: "m_t = m̄_t")
//     u = (m̄ / c1) / (√v_{T_w} / √c2_w + ε),     c2_w = 1 − β2^{T_w}
//   The update u is written to the gradients and the optimizer takes w ← w − γ·(u + λ·w), with
//   λ = optimizer.weight_decay: decoupled weight decay, as DeepSpeed's OnebitAdam applies it
//   (update += λ·w; w −= γ·update) and as AdamW does.
//
// Bias correction: the warm-up is the paper's "original Adam", Kingma & Ba's with bias correction,
// as torch.optim.Adam and runner/train/adam_optimizer.h compute it: the warm-up trains as
// optimizer.name: adamw with these betas and eps on dense's averaged gradient, up to the fp32
// rounding of the order of the operations. After the freeze v keeps its correction c2_w and m is
// still divided by c1 = 1 − β1^t (which tends to 1). bias_correction: false gives DeepSpeed's
// arithmetic, which corrects neither stage (its bias_correction argument is stored, never read):
// u = m / (√v + ε).
//
// The optimizer: optimizer.name must be sgd (needs_plain_sgd(); adam and adamw are refused, as for
// every algorithm that takes its own steps, and lars would rescale the step by its trust ratio).
// optimizer.momentum is not used (applies_momentum(); β1 is the momentum the updates get, so a
// configured optimizer.momentum other than β1 is reported) nor is nesterov. lr, its schedule and
// weight_decay are.
//
// Hyper-parameters (defaults: Adam's and DeepSpeed's, except freeze_step):
//   beta1            0.9     β1, the momentum's decay
//   beta2            0.999   β2, the variance's decay
//   eps              1e-8    ε, added to √v. After the freeze every element of a chunk is sent
//                            with the chunk's magnitude σ, so an element whose v is (nearly) 0 at
//                            the freeze (a dead ReLU unit's weights) steps by γ·σ/ε: with 1e-8
//                            LeNet-5 diverges three steps after it. DeepSpeed's remedy is a mask
//                            of such elements given by the user (exp_avg_mask); here a larger ε
//                            (1e-3 in experiments/quick.yaml, where Adam itself trains as well)
//   freeze_step      150     T_w: dense Adam steps before v is frozen and the momentum compressed
//                            (DeepSpeed's argument defaults to 100000; its tutorial advises 15-25%
//                            of the run's steps, 23000 for BERT-Large: 150 is 16% of the quick
//                            demo's 938 steps)
//   bias_correction  true    false: DeepSpeed's uncorrected u = m / (√v + ε)
//
// Bytes per step: warm-up, one fp32 allreduce of each bucket (4 bytes per element, as dense);
// compression, exchange/onebit_allreduce.h's n·S payload bytes per bucket of K tensors on n ranks,
// S = 4·K + Σ_k c_k/8 with c_k = 8·⌈d_k / 8n⌉: n − 1 sendrecvs and one allgather of S bytes.
//
// Where this differs from DeepSpeed: the scales cover each tensor's own elements (DeepSpeed pads
// every tensor to a multiple of n·lcm(n, 8) elements and counts the padding in its norms and
// errors); one message per peer and bucket (DeepSpeed: per tensor); on one rank both stages still
// compress (DeepSpeed skips the compression); a checkpoint keeps both error memories (DeepSpeed
// resets them on loading).
#include <ATen/ATen.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/exchange/onebit_allreduce.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct OnebitAdamParams {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  int64_t freeze_step = 150;
  bool bias_correction = true;
  template <class V>
  void visit(V& v) {
    v("beta1", beta1, "decay of the momentum m = beta1 m + (1 - beta1) g", in_range(0, 1, true));
    v("beta2", beta2, "decay of the variance v = beta2 v + (1 - beta2) g^2 (frozen after warm-up)",
      in_range(0, 1, true));
    v("eps", eps,
      "added to sqrt(v) in the update m / (sqrt(v) + eps); after the freeze an element whose v is "
      "near 0 steps by lr*sigma/eps, so models with dead units need a larger eps (1e-3)",
      greater_than(0));
    v("freeze_step", freeze_step,
      "warm-up steps of dense Adam; then v is frozen and the momentum sent as 1-bit signs",
      at_least(1));
    v("bias_correction", bias_correction,
      "divide m by 1 - beta1^t and v by 1 - beta2^t as Adam does (false: DeepSpeed's uncorrected "
      "m / (sqrt(v) + eps))");
  }
};

// One parameter tensor's state: Adam's moments, its step count and the compression's memories.
struct OnebitAdamTensor {
  at::Tensor m, v;
  int64_t steps = 0;
  OnebitErrors errors;
};

class OnebitAdam final : public Algorithm {
 public:
  explicit OnebitAdam(const OnebitAdamParams& p) : p_(p) {}

  bool applies_momentum() const override { return true; }
  double own_momentum() const override { return p_.beta1; }
  bool needs_plain_sgd() const override { return true; }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    // The entries of a bucket are stepped together, so its first entry's count is every one's.
    std::vector<OnebitAdamTensor*> states;
    for (const auto& e : bucket.entries) {
      OnebitAdamTensor& s = tensors_[e.name];
      if (!s.m.defined()) {
        s.m = at::zeros(e.grad.sizes(), e.grad.options().dtype(at::kFloat));
        s.v = at::zeros_like(s.m);
      }
      ++s.steps;
      states.push_back(&s);
    }
    const bool compressing = states.front()->steps > p_.freeze_step;
    ctx.stats["onebit-adam.compressing"] = compressing ? 1.0 : 0.0;
    if (compressing) {
      compression_step(bucket, states, comm);
    } else {
      warmup_step(bucket, states, comm);
    }
  }

  void save_state(AlgorithmState& out) const override {
    for (const auto& [name, s] : tensors_) {
      out["m." + name] = s.m.detach().clone();
      out["v." + name] = s.v.detach().clone();
      save_number(out, "step." + name, static_cast<double>(s.steps));
      if (s.errors.worker.defined()) out["worker_error." + name] = s.errors.worker.clone();
      if (s.errors.server.defined()) out["server_error." + name] = s.errors.server.clone();
    }
  }
  void load_state(const AlgorithmState& in) override {
    tensors_.clear();
    const std::string step = "step.";
    for (auto it = in.lower_bound(step); it != in.end() && it->first.rfind(step, 0) == 0; ++it) {
      const std::string name = it->first.substr(step.size());
      OnebitAdamTensor& s = tensors_[name];
      s.steps = static_cast<int64_t>(it->second.item<double>());
      s.m = load_tensor(in, "m." + name).clone();
      s.v = load_tensor(in, "v." + name).clone();
      if (in.count("worker_error." + name)) s.errors.worker = in.at("worker_error." + name).clone();
      if (in.count("server_error." + name)) s.errors.server = in.at("server_error." + name).clone();
    }
  }

 private:
  // c1 = 1 − β1^t and √c2 (1 without bias correction).
  double momentum_correction(int64_t t) const {
    return p_.bias_correction ? 1 - std::pow(p_.beta1, static_cast<double>(t)) : 1.0;
  }
  double variance_correction_sqrt(int64_t t) const {
    return p_.bias_correction ? std::sqrt(1 - std::pow(p_.beta2, static_cast<double>(t))) : 1.0;
  }

  // u = (m / c1) / (√v / √c2 + ε), written into the entry's gradient.
  void write_update(GradEntry& e, const OnebitAdamTensor& s, int64_t variance_steps) const {
    const at::Tensor denom = s.v.sqrt().div_(variance_correction_sqrt(variance_steps)).add_(p_.eps);
    e.grad.copy_(s.m.div(momentum_correction(s.steps)).div_(denom));
  }

  void warmup_step(GradBucket& bucket, const std::vector<OnebitAdamTensor*>& states,
                   Communicator& comm) {
    comm.allreduce_sum(bucket.flat);
    if (comm.size() > 1) bucket.flat.div_(comm.size());
    for (size_t i = 0; i < states.size(); ++i) {
      OnebitAdamTensor& s = *states[i];
      const at::Tensor g = bucket.entries[i].grad.to(at::kFloat);
      s.m.mul_(p_.beta1).add_(g, 1 - p_.beta1);
      s.v.mul_(p_.beta2).addcmul_(g, g, 1 - p_.beta2);
      write_update(bucket.entries[i], s, s.steps);
    }
  }

  void compression_step(GradBucket& bucket, const std::vector<OnebitAdamTensor*>& states,
                        Communicator& comm) {
    std::vector<at::Tensor> momenta;
    std::vector<OnebitErrors*> errors;
    for (size_t i = 0; i < states.size(); ++i) {
      OnebitAdamTensor& s = *states[i];
      s.m.mul_(p_.beta1).add_(bucket.entries[i].grad.to(at::kFloat), 1 - p_.beta1);
      momenta.push_back(s.m);
      errors.push_back(&s.errors);
    }
    onebit_allreduce(momenta, errors, comm);  // m ← m̄, in place
    for (size_t i = 0; i < states.size(); ++i)
      write_update(bucket.entries[i], *states[i], p_.freeze_step);
  }

  const OnebitAdamParams p_;
  std::map<std::string, OnebitAdamTensor> tensors_;
};

}  // namespace

AlgorithmInfo onebit_adam_algorithm() {
  AlgorithmInfo info = algorithm_info<OnebitAdam, OnebitAdamParams>(
      "onebit-adam",
      "1-bit Adam: dense Adam for freeze_step steps, then the variance frozen and each worker's "
      "momentum sent as 1-bit signs with a scale per tensor, error feedback at the workers and at "
      "the chunk-owning servers (optimizer.name: sgd applies lr and decoupled weight decay)",
      "Tang, Gan, Awan, Rajbhandari, Li, Lian, Liu, Zhang, He. 1-bit Adam: Communication Efficient "
      "Large-Scale Training with Adam's Convergence Speed. ICML 2021");
  info.device_independent = true;
  info.not_lossless_because =
      "it is Adam, not SGD: with freeze_step past the run it is exact Adam on the averaged "
      "gradient, after the freeze Adam's momentum under 1-bit compression with a frozen variance";
  return info;
}

}  // namespace cedar
