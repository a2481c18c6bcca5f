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
  // Checkpoints: save_state writes the state into `out`; load_state (after setup()) restores it
  // so that the next step computes exactly what it would have without the interruption.
  // Stateless algorithms keep the defaults.
  virtual void save_state(AlgorithmState& out) const {}
  virtual void load_state(const AlgorithmState& in) {}
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

// Every registered algorithm, in registration order (algorithms/registry.cpp).
const std::vector<AlgorithmInfo>& algorithm_catalog();
// Throws ConfigError naming the unknown algorithm and the known ones.
const AlgorithmInfo& find_algorithm(const std::string& name);

}  // namespace cedar
