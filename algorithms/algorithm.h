#pragma once
// The algorithm plugin interface. An algorithm sees the gradients of one bucket together with
// the communicator (so multi-round schemes fit, and every byte is metered) and may act again
// after the optimizer step (model averaging, bookkeeping).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/params.h"

namespace cedar {

class Communicator;

struct NamedTensor {
  std::string name;  // e.g. "layer1.0.conv1.weight"
  at::Tensor tensor;
};

// One gradient of the model inside a bucket.
struct GradEntry {
  std::string name;
  at::Tensor param;  // the parameter itself (do not modify in reduce_gradients)
  at::Tensor grad;   // view into GradBucket::flat with the parameter's shape
};

// A fusion buffer: the gradients of several parameters in one contiguous fp32 tensor.
struct GradBucket {
  int64_t index = 0;
  at::Tensor flat;
  std::vector<GradEntry> entries;
};

// An algorithm's checkpoint state: every tensor and number that carries over from one step to
// the next (error-feedback memories, PowerSGD's Q, DGC's u and v, LAG's last uploads), by key.
// Numbers are 0-dim tensors (algorithms/algorithm_state.h has helpers).
using AlgorithmState = std::map<std::string, at::Tensor>;

// The gradient of this rank's minibatch of the step at other parameters `at` (one tensor per
// parameter, in the order given to setup()), one tensor per parameter in the same order.
using BatchGradientAt = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>& at)>;

struct StepContext {
  int64_t step = 0;   // global step, from 0
  int64_t epoch = 0;  // current epoch, from 0
  int64_t steps_per_epoch = 1;
  double lr = 0;                  // learning rate of this step
  double base_lr = 0;             // base learning rate (after large-batch scaling)
  double first_decay_epoch = -1;  // epoch of the first step decay of the lr (-1: none)
  uint64_t seed = 0;  // run seed (stochastic compressors derive their generators from it)
  // The optimizer's momentum buffers, in the order of the parameters given to setup()
  // (undefined tensors before the first step, or when momentum is off).
  std::vector<at::Tensor>* momentum_buffers = nullptr;
  std::map<std::string, double> stats;  // per-step values an algorithm reports (logged)
  // Offered by the trainer to an algorithm whose uses_batch_gradient_at() is true, during
  // reduce_gradients (empty elsewhere, and in harnesses that have no model): a second forward and
  // backward pass of the step's minibatch at other parameters, which leaves the model, its buffers
  // and the step's gradients as they were. Its time is compute, not communication; the trainer
  // counts the passes in stats "second_passes" and their time in "second_pass_seconds".
  BatchGradientAt batch_gradient_at;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // Before setup(): how many consecutive ranks share a node in this run (network.ranks_per_node,
  // or the launcher's count). Algorithms whose exchange has levels (hierarchical) use it.
  virtual void configure_nodes(int ranks_per_node) {}
  // Once before training, after the initial broadcast: parameters in model order.
  virtual void setup(const std::vector<NamedTensor>& params, Communicator& comm) {}
  // Leaves in every entry's grad the update direction the optimizer applies; for most
  // algorithms the (approximate) average of the workers' gradients.
  virtual void reduce_gradients(GradBucket& bucket, Communicator& comm, StepContext& ctx) = 0;
  // After the optimizer step (e.g. local SGD's periodic model averaging).
  virtual void after_step(const std::vector<NamedTensor>& params,
                          const std::vector<NamedTensor>& buffers, Communicator& comm,
                          StepContext& ctx) {}
  // True when the algorithm decides the momentum of the updates itself (DGC's momentum
  // correction, Signum's momentum before the sign, plain gradient steps for LAG and EF-signSGD);
  // the optimizer then runs without momentum and optimizer.momentum is not used.
  virtual bool applies_momentum() const { return false; }
  // With applies_momentum(): the momentum the updates actually get (0: plain steps). The run
  // record stores it and a configured optimizer.momentum that differs is reported.
  virtual double own_momentum() const { return 0; }
  // With applies_momentum(): the momentum the optimizer gives its weight-decay term wd·w, kept in
  // a buffer of its own (0: weight decay without momentum). DGC applies its momentum to the
  // gradient only; its reference optimizer gives the weight-decay term the same momentum, so that
  // the effective L2 matches dense SGD's.
  virtual double weight_decay_momentum() const { return 0; }
  // With applies_momentum(): true when the direction written to the gradients is already the whole
  // preconditioned step (1-bit Adam's m / (√v + ε)), which the optimizer must apply as plain SGD
  // does, w ← w − lr·(direction + wd·w); LARS's layer-wise trust ratio would rescale it, so only
  // optimizer.name: sgd runs such an algorithm (check_optimizer_for).
  virtual bool needs_plain_sgd() const { return false; }
  // True when reduce_gradients may call ctx.batch_gradient_at (LASG-WK2 compares the gradients of
  // the same minibatch at two parameter vectors); the trainer then offers it, and refuses
  // train.overlap, whose exchange runs inside backward.
  virtual bool uses_batch_gradient_at() const { return false; }
  // Checkpoints: save_state writes the state into `out`; load_state (after setup()) restores it
  // so that the next step computes exactly what it would have without the interruption.
  // Stateless algorithms keep the defaults.
  virtual void save_state(AlgorithmState& out) const {}
  virtual void load_state(const AlgorithmState& in) {}
};

// A setting under which an algorithm trains exactly like dense SGD (the equivalence rung of the
// testing ladder): tests/mpi/mpi_fidelity_test.cpp trains every one of them beside dense SGD from
// the same state on 2 MPI ranks, 16 steps through the whole trainer, and compares the parameters.
struct LosslessSetting {
  std::string params;  // the algorithm's keys as YAML, e.g. "{ratio: 1}"
  // 0: bit for bit (the arithmetic is dense SGD's). Otherwise only the order of the summations
  // differs, and this is the relative distance ‖θ − θ_dense‖ / ‖θ_dense‖ allowed after 16 steps.
  double tolerance = 0;
};

struct AlgorithmInfo {
  std::string name;
  std::string description;
  std::string paper;
  std::function<std::vector<ParamDoc>()> params;
  // Parses the algorithm's keys (unknown keys are errors) and builds it; writes the resolved
  // parameters as YAML into *resolved.
  std::function<std::unique_ptr<Algorithm>(const YAML::Node&, const Source&, std::string* resolved)>
      make;
  // False for the parameter server, which trains through loops of its own (runner/ps/run.h)
  // rather than through reduce_gradients and after_step.
  bool exchanges_gradients = true;

  // Traits, set by the paper file's factory: what the suites, tests and benchmarks derive from
  // the catalog instead of keeping lists of algorithms (docs/adding_an_algorithm.md).
  //
  // The same gradients give the same update on every device (no draws from a device's own
  // generator, no device-dependent selection), so a GPU run is checked against a CPU run
  // (tests/unit/gpu_test.cpp).
  bool device_independent = false;
  // Decentralized: no global average; each rank mixes its model with its graph neighbours' after
  // the optimizer step (D-PSGD, CHOCO-SGD). Implies acts_after_step.
  bool gossip = false;
  // after_step does work of its own (model averaging, gossip mixing, LAG's history), so the
  // algorithm cannot act on a subset of the ranks (hierarchical's node leaders).
  bool acts_after_step = false;
  // The codec of the registry (algorithms/codecs/codec_registry.h) that encodes its gradients with
  // its default parameters; "" where it encodes by rules of its own or sends dense values.
  std::string codec{};
  // False where a run needs a setting that has no default (script: the path of the researcher's
  // module), so that `every: registered` and the tests and benchmarks that build every algorithm
  // from its defaults leave it out.
  bool runs_from_defaults = true;
  // Its exchange treats every gradient element on its own: the update of an element depends only
  // on that element's gradients on the ranks (and the step), not on the bucket's other elements,
  // its index, its entries' shapes or the order buckets come in. Such an exchange may be cut
  // anywhere, so train.schedule: priority (runner/train/exchange_schedule.h) runs it on slices of
  // the buckets; tests/algorithms/elementwise_exchange_test.cpp checks that each algorithm with
  // the trait gives bitwise the same update on slices as on the whole bucket.
  bool elementwise_exchange = false;
  // The settings under which it trains like dense SGD; where there is none, why not.
  std::vector<LosslessSetting> lossless{};
  std::string not_lossless_because{};
};

// Builds an AlgorithmInfo for algorithm class A constructed from parameter struct P.
template <class A, class P>
AlgorithmInfo algorithm_info(std::string name, std::string description, std::string paper) {
  AlgorithmInfo info{std::move(name), std::move(description), std::move(paper), nullptr, nullptr};
  info.params = [] { return describe_params<P>(); };
  info.make = [](const YAML::Node& node, const Source& src, std::string* resolved) {
    P p;
    load_params(p, node, src, "algorithm", {"name"});
    if (resolved) {
      YAML::Emitter out;
      out << YAML::BeginMap;
      YamlDumper d(out);
      p.visit(d);
      out << YAML::EndMap;
      *resolved = out.c_str();
    }
    return std::unique_ptr<Algorithm>(new A(p));
  };
  return info;
}

// Every registered algorithm, in the order of algorithms/algorithm_list.h.
const std::vector<AlgorithmInfo>& algorithm_catalog();
// The registered algorithms that train through the trainer's gradient exchange (every one but the
// parameter server) and run from their defaults (not script), in catalog order: what a suite's
// `every: registered` entry expands to.
std::vector<std::string> gradient_algorithm_names();
// Throws ConfigError naming the unknown algorithm and the known ones.
const AlgorithmInfo& find_algorithm(const std::string& name);

}  // namespace cedar
