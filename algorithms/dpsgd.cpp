// D-PSGD: decentralized parallel SGD.
// Paper: X. Lian, C. Zhang, H. Zhang, C.-J. Hsieh, W. Zhang, J. Liu, "Can Decentralized Algorithms
// Outperform Centralized Algorithms? A Case Study for Decentralized Parallel Stochastic Gradient
// Descent", NeurIPS 2017 (Algorithm 1).
//
// Rule, on every worker i with its own model x_i and a symmetric doubly stochastic mixing matrix W
// over a communication graph (algorithms/gossip/topology.h; uniform weights 1/(degree + 1), the
// paper's ring W_ii = W_i,i±1 = 1/3):
//   x_i^{t+1} = Σ_j W_ij x_j^t − η·d_i^t
// where d_i^t is the update direction of the worker's own optimizer at its own model x_i^t: the
// local stochastic gradient, with weight decay and the optimizer's momentum applied to it
// locally, as the decentralized SGD baseline of Koloskova et al.'s released code runs (momentum
// 0.9 on a ring: epfml/ChocoSGD, dl_code/exps/finetune-resnet20-cifar10/example.sh); momentum
// is not part of Algorithm 1. The gradient is never averaged, and there is no global collective.
//
// Where it happens: reduce_gradients(bucket) — per bucket, on the communication thread with
// train.overlap, so the exchange overlaps backward — sends the bucket's parameters x_i^t (the
// model before this step's update) to every neighbour, receives theirs, and keeps
// Δ_i = Σ_j W_ij x_j^t − x_i^t; the gradient stays local. The optimizer then makes
// x_i^t − η·d_i^t, and after_step adds Δ_i, giving Σ_j W_ij x_j^t − η·d_i^t (up to rounding).
//
// Wire format: one message per neighbour per bucket, the bucket's parameters as they are (fp32,
// in bucket order) — degree × 4 bytes per parameter per step, one sendrecv per neighbour per
// bucket. On one rank nothing is exchanged (plain SGD).
//
// Buffers (batch-norm running statistics) stay local: each worker normalises with its own
// statistics, and the evaluated model averages them with the parameters (evaluator.h).
//
// Hyper-parameters:
//   topology (ring)     ring | torus | exponential: the paper's experiments use a ring.
//   torus_rows (0)      rows of the torus (0: the most square factoring of P).
#include <ATen/ATen.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/gossip/neighbour_exchange.h"
#include "algorithms/gossip/topology.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

// The tag of D-PSGD's model messages (one per neighbour per bucket, in bucket order).
constexpr int kDpsgdTag = 0x6d0;

struct DpsgdParams : GraphParams {};

class Dpsgd final : public Algorithm {
 public:
  explicit Dpsgd(const DpsgdParams& p) : p_(p) {}

  void setup(const std::vector<NamedTensor>&, Communicator& comm) override {
    topology_ = make_topology(p_.topology, comm.size(), static_cast<int>(p_.torus_rows));
  }

  void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext&) override {
    if (topology_.degree() == 0 || bucket.entries.empty()) return;  // one rank: plain SGD
    std::vector<at::Tensor> flat;
    for (const auto& e : bucket.entries) flat.push_back(e.param.detach().reshape({-1}));
    // This bucket's buffers of the last step, reused: its parameters, the neighbours' and the
    // mixing move (the last step's moves were added in after_step).
    Buffers& buf = buffers_of(bucket.index);
    int64_t numel = 0;
    for (const auto& f : flat) numel += f.numel();
    if (!buf.x.defined() || buf.x.numel() != numel ||
        buf.x.scalar_type() != flat[0].scalar_type() || buf.x.device() != flat[0].device())
      buf.x = at::empty({numel}, flat[0].options());
    at::cat_out(buf.x, flat);
    exchange_with_neighbours(topology_, buf.x, comm, kDpsgdTag, buf.received);
    mix_uniform_minus_mine(topology_, buf.x, buf.received, buf.delta);
    const at::Tensor& delta = buf.delta;
    std::lock_guard<std::mutex> lock(mu_);
    int64_t offset = 0;
    for (const auto& e : bucket.entries) {
      pending_[e.name] = delta.narrow(0, offset, e.param.numel()).view(e.param.sizes());
      offset += e.param.numel();
    }
  }

  void after_step(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>&,
                  Communicator&, StepContext&) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& p : params) {
      auto it = pending_.find(p.name);
      if (it != pending_.end()) p.tensor.detach().add_(it->second);
    }
    pending_.clear();
  }

 private:
  DpsgdParams p_;
  Topology topology_;
  struct Buffers {
    at::Tensor x, delta;
    std::vector<at::Tensor> received;
  };
  Buffers& buffers_of(int64_t bucket) {
    std::lock_guard<std::mutex> lock(mu_);
    return buffers_[bucket];  // std::map: references stay valid as buckets are added
  }

  std::map<int64_t, Buffers> buffers_;  // per bucket index
  std::mutex
      mu_;  // pending_ and buffers_ are filled on the communication thread with train.overlap
  // Per parameter: Σ_j W_ij x_j^t − x_i^t of this step, added after the optimizer's step.
  std::map<std::string, at::Tensor> pending_;
};

}  // namespace

AlgorithmInfo dpsgd_algorithm() {
  AlgorithmInfo info = algorithm_info<Dpsgd, DpsgdParams>(
      "dpsgd",
      "D-PSGD: each worker averages its model with its graph neighbours' (ring, torus, "
      "exponential) and takes its own local step; no global collective",
      "Lian, Zhang, Zhang, Hsieh, Zhang, Liu. Can Decentralized Algorithms Outperform "
      "Centralized Algorithms? NeurIPS 2017");
  info.device_independent = true;
  info.gossip = true;
  info.acts_after_step = true;
  info.not_lossless_because =
      "each worker steps with its own gradient: models are mixed, gradients never averaged";
  return info;
}

}  // namespace cedar
