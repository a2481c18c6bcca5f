// Hierarchical (two-level) exchange — as BytePS (Jiang et al., "A Unified Architecture for
// Accelerating Distributed DNN Training in Heterogeneous GPU/CPU Clusters", OSDI 2020), Horovod's
// hierarchical allreduce and the Deep Gradient Compression reference code recommend: dense inside
// a node, where links are fast, compressed between nodes, where they are slow.
//
// Rule (per bucket, nodes of R consecutive ranks, node = rank / R, local rank = rank mod R):
//   1. g_node = (1/R) Σ_{ranks of the node} g          dense allreduce-average inside the node
//   2. on each node's leader (local rank 0): the inner algorithm `inter` exchanges g_node among
//      the leaders and leaves its update direction (for a lossless inner scheme, the average of
//      the node averages, i.e. the average of every rank's gradient, nodes being of equal size)
//   3. every rank of the node receives the leader's result              broadcast inside the node
// The inner algorithm is any registered one that acts in reduce_gradients alone: not one whose
// acts_after_step trait is set (local SGD's averaging, LAG's history, gossip mixing would run on
// the leaders only), not the parameter server, not hierarchical itself; its own state (error
// feedback, momentum) lives on the leaders and is checkpointed under "inter.". Its momentum rule is
// the run's (DGC's momentum correction).
//
// Wire format: level "intra" (communicator split(node, local rank)): one fp32 allreduce of the
// bucket and one fp32 broadcast of it per bucket, 4·n bytes each; level "inter" (split(0, node)
// of the leaders; the other ranks form a communicator they never use): the inner algorithm's
// wire format among N = P / R leaders. Non-leaders send nothing between nodes.
//
// Hyper-parameters:
//   ranks_per_node (default 0)  R; 0: the run's network.ranks_per_node, or when that is 0 too,
//                               the launcher's count of ranks on this node. Must divide P.
//   inter (default {name: qsgd}) the inner algorithm between leaders: its name and its own keys,
//                               e.g. {name: topk, ratio: 0.01}, or just its name.
#include <ATen/ATen.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "comm/communicator.h"

namespace cedar {
namespace {

constexpr const char* kName = "hierarchical";
constexpr const char* kDefaultInner = "qsgd";

// Whether `a` can exchange between the node leaders: it trains through reduce_gradients alone
// (after_step would run on the leaders only) and nests no levels of its own.
bool between_leaders(const AlgorithmInfo& a) {
  return a.exchanges_gradients && !a.acts_after_step && a.name != kName;
}

// The registered algorithms that cannot, "a, b, c".
std::string not_between_leaders() {
  std::string out;
  for (const auto& a : algorithm_catalog())
    if (!between_leaders(a)) out += (out.empty() ? "" : ", ") + a.name;
  return out;
}

struct HierarchicalParams {
  int ranks_per_node = 0;

  template <class V>
  void visit(V& v) {
    v("ranks_per_node", ranks_per_node,
      "consecutive ranks sharing one node: dense allreduce among them, the inner exchange among "
      "node leaders; 0: the run's network.ranks_per_node (or the launcher's count)",
      at_least(0));
  }
};

class Hierarchical final : public Algorithm {
 public:
  Hierarchical(const HierarchicalParams& p, std::unique_ptr<Algorithm> inner)
      : ranks_per_node_(p.ranks_per_node), inner_(std::move(inner)) {}

  void configure_nodes(int ranks_per_node) override { run_ranks_per_node_ = ranks_per_node; }

  void setup(const std::vector<NamedTensor>& params, Communicator& comm) override {
    const int per_node = ranks_per_node_ > 0 ? ranks_per_node_ : std::max(1, run_ranks_per_node_);
    if (comm.size() % per_node != 0)
      throw ConfigError("algorithm hierarchical: " + std::to_string(per_node) +
                        " ranks per node (algorithm.ranks_per_node, else "
                        "network.ranks_per_node) do not divide the " +
                        std::to_string(comm.size()) + " ranks into equal nodes");
    const int node = comm.rank() / per_node, local = comm.rank() % per_node;
    intra_ = comm.split(node, local, "intra");
    inter_ = comm.split(local == 0 ? 0 : 1, node, "inter");
    leader_ = local == 0;
    if (leader_) inner_->setup(params, *inter_);
  }

  void reduce_gradients(GradBucket& bucket, Communicator&, StepContext& ctx) override {
    intra_->allreduce_sum(bucket.flat);
    if (intra_->size() > 1) bucket.flat.div_(intra_->size());
    if (leader_) inner_->reduce_gradients(bucket, *inter_, ctx);
    intra_->broadcast(bucket.flat, 0);
  }

  bool applies_momentum() const override { return inner_->applies_momentum(); }
  double own_momentum() const override { return inner_->own_momentum(); }
  double weight_decay_momentum() const override { return inner_->weight_decay_momentum(); }
  bool needs_plain_sgd() const override { return inner_->needs_plain_sgd(); }

  void save_state(AlgorithmState& out) const override {
    if (!leader_) return;
    AlgorithmState inner;
    inner_->save_state(inner);
    for (auto& [key, t] : inner) out["inter." + key] = t;
  }
  void load_state(const AlgorithmState& in) override {
    if (!leader_) return;
    AlgorithmState inner;
    for (const auto& [key, t] : in)
      if (key.rfind("inter.", 0) == 0) inner[key.substr(6)] = t;
    inner_->load_state(inner);
  }

 private:
  int ranks_per_node_;
  int run_ranks_per_node_ = 0;
  std::unique_ptr<Algorithm> inner_;
  std::unique_ptr<Communicator> intra_, inter_;
  bool leader_ = false;
};

// The inner algorithm of `node` ("inter": absent, a name, or a mapping with `name`), built with
// its own keys; its resolved parameters go to *resolved as a mapping that includes its name.
std::unique_ptr<Algorithm> make_inner(const YAML::Node& node, const Source& src,
                                      std::string* resolved) {
  const YAML::Node inter = node && node.IsMap() ? node["inter"] : YAML::Node();
  std::string name = kDefaultInner;
  YAML::Node params;
  if (inter && inter.IsScalar()) {
    name = inter.as<std::string>();
  } else if (inter && inter.IsMap()) {
    if (inter["name"]) name = inter["name"].as<std::string>();
    params = inter;
  } else if (inter && !inter.IsNull()) {
    throw ConfigError(where(src, "algorithm.inter", inter) +
                      ": algorithm.inter must be an algorithm's name or a mapping with its name "
                      "and keys (got " +
                      node_kind(inter) + ")");
  }
  const AlgorithmInfo* info = nullptr;
  try {
    info = &find_algorithm(name);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("algorithm.inter (") + name + "): " + e.what());
  }
  if (!between_leaders(*info))
    throw ConfigError(where(src, "algorithm.inter", inter) + ": algorithm.inter: '" + name +
                      "' cannot be the exchange between node leaders (it acts outside the "
                      "gradient exchange, or nests levels)");
  std::string inner_yaml;
  std::unique_ptr<Algorithm> inner;
  try {
    inner = info->make(params, src, resolved ? &inner_yaml : nullptr);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("algorithm.inter (") + name + "): " + e.what());
  }
  if (resolved) {
    YAML::Emitter out;
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name;
    for (const auto& kv : YAML::Load(inner_yaml))
      out << YAML::Key << kv.first << YAML::Value << kv.second;
    out << YAML::EndMap;
    *resolved = out.c_str();
  }
  return inner;
}

}  // namespace

AlgorithmInfo hierarchical_algorithm() {
  AlgorithmInfo info{
      kName,
      "two levels: dense allreduce-average inside each node, an inner algorithm (inter) between "
      "node leaders, broadcast back inside the node",
      "Jiang et al. A Unified Architecture for Accelerating Distributed DNN Training in "
      "Heterogeneous GPU/CPU Clusters (BytePS). OSDI 2020; Lin et al. Deep Gradient Compression. "
      "ICLR 2018 (reference code)",
      nullptr, nullptr};
  info.params = [] {
    std::vector<ParamDoc> docs = describe_params<HierarchicalParams>();
    docs.push_back({"inter", std::string("{name: ") + kDefaultInner + "}",
                    "the exchange between node leaders: a registered algorithm's name and its own "
                    "keys, e.g. {name: topk, ratio: 0.01} (not " +
                        not_between_leaders() + ")",
                    ""});
    return docs;
  };
  info.make = [](const YAML::Node& node, const Source& src, std::string* resolved) {
    HierarchicalParams p;
    load_params(p, node, src, "algorithm", {"name", "inter"});
    std::string inner_yaml;
    std::unique_ptr<Algorithm> inner = make_inner(node, src, resolved ? &inner_yaml : nullptr);
    if (resolved) {
      YAML::Emitter out;
      out << YAML::BeginMap;
      YamlDumper d(out);
      p.visit(d);
      out << YAML::Key << "inter" << YAML::Value << YAML::Load(inner_yaml);
      out << YAML::EndMap;
      *resolved = out.c_str();
    }
    return std::unique_ptr<Algorithm>(new Hierarchical(p, std::move(inner)));
  };
  // Dense between the leaders: a dense average inside each node, then of the node averages (on 2
  // ranks one of the two levels has one rank, and the other makes dense SGD's one sum).
  info.lossless = {{"{inter: dense}", 0}};
  return info;
}

}  // namespace cedar
