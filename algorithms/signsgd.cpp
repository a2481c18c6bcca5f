// signSGD with majority vote — Bernstein, Wang, Azizzadenesheli, Anandkumar, "signSGD: Compressed
// Optimisation for Non-Convex Problems", ICML 2018; Bernstein, Zhao, Azizzadenesheli, Anandkumar,
// "signSGD with Majority Vote is Communication Efficient and Fault Tolerant", ICLR 2019.
//
// Rule (Signum with majority vote, Algorithm 1 of the 2019 paper), per worker m and parameter x:
//   v_m ← (1 − β)·g_m + β·v_m            (local momentum, kept by this algorithm; v starts at 0)
//   send sign(v_m)                         (1 bit per element)
//   V = sign(Σ_m sign(v_m))                (majority vote, computed by every rank)
//   x ← x − η·(V + λ·x)                    (the optimizer: lr η, weight decay λ, NO momentum)
// β = 0 is plain signSGD with majority vote. The vote is the update direction written to the
// gradients; the optimizer multiplies it by its learning rate and adds its weight decay, exactly
// the paper's step. applies_momentum() is true for every β (also 0): momentum belongs before the
// sign, and the optimizer must not add a second momentum after the vote.
//
// Hyper-parameters:
//   momentum (default 0.9)  β of Signum, the paper's practical variant (its ImageNet and QRNN
//                           experiments); 0 gives signSGD.
//
// Encoding of one tensor of n elements (codecs/sign_codec.cpp): n sign bits packed by
// bit_packing.h (LSB first), bit 1 for v ≥ 0 (+1) and 0 for v < 0 (−1): ⌈n/8⌉ bytes, one
// allgather per bucket. One bit cannot carry sign(0) = 0, so an exact zero votes +1. Ties of the
// vote (possible with an even number of workers) give V = 0: that coordinate does not move this
// step.
#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_state.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/codecs.h"
#include "algorithms/exchange/compressed_exchange.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

struct SignSgdParams {
  double momentum = 0.9;

  template <class V>
  void visit(V& v) {
    v("momentum", momentum,
      "beta: Signum's local momentum v = (1 - beta) g + beta v, applied before the sign (0: plain "
      "signSGD)",
      in_range(0, 1, /*hi_open=*/true));
  }
};

class SignSgd final : public Algorithm {
 public:
  explicit SignSgd(const SignSgdParams& p) : beta_(p.momentum) {}

  bool applies_momentum() const override { return true; }
  double own_momentum() const override { return beta_; }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) override {
    // The signs of the momenta are sent (the vote then overwrites the gradients).
    std::vector<at::Tensor> encode;
    if (beta_ > 0) {
      for (auto& e : bucket.entries) {
        at::Tensor& v = momentum_[e.name];
        if (!v.defined()) v = at::zeros_like(e.grad);
        v.mul_(beta_).add_(e.grad, 1 - beta_);
        encode.push_back(v);
      }
    }
    at::Generator gen =
        make_generator(ctx.seed, comm.rank(), ctx.step, static_cast<uint64_t>(bucket.index));
    exchange_compressed(bucket, comm, *compressor_, nullptr, gen, Combine::kMajority, encode);
  }

  void save_state(AlgorithmState& out) const override {
    save_tensor_map(out, "momentum.", momentum_);
  }
  void load_state(const AlgorithmState& in) override {
    load_tensor_map(in, "momentum.", momentum_);
  }

 private:
  double beta_;
  std::unique_ptr<Compressor> compressor_ = make_sign_compressor();
  std::map<std::string, at::Tensor> momentum_;
};

}  // namespace

AlgorithmInfo signsgd_algorithm() {
  AlgorithmInfo info = algorithm_info<SignSgd, SignSgdParams>(
      "signsgd",
      "signSGD / Signum with majority vote: local momentum, 1-bit signs (allgather), the update is "
      "the sign of the sum of the workers' signs",
      "Bernstein, Wang, Azizzadenesheli, Anandkumar. signSGD: Compressed Optimisation for "
      "Non-Convex Problems. ICML 2018; Bernstein, Zhao, Azizzadenesheli, Anandkumar. signSGD with "
      "Majority Vote is Communication Efficient and Fault Tolerant. ICLR 2019");
  info.device_independent = true;
  info.codec = "sign";
  info.not_lossless_because = "the update is a sign (a majority vote), whatever the magnitudes";
  return info;
}

}  // namespace cedar
