// The catalog (algorithms/algorithm_list.h, algorithms/registry.cpp) and the traits each paper file
// sets on its entry, where they can be checked on CPUs in one process: names and documents, the
// lossless settings parse (tests/mpi/mpi_fidelity_test.cpp trains every one against dense SGD),
// codecs of the codec registry, and what gossip and acts_after_step say about reduce_gradients
// and after_step. (device_independent is checked on a GPU by tests/unit/gpu_test.cpp.)
#include <gtest/gtest.h>
#include <torch/types.h>

#include <set>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/codec_registry.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

TEST(Catalog, NamesAreUniqueDocumentedAndBuildWithTheirDefaultsWhereTheySaySo) {
  std::set<std::string> names;
  std::vector<std::string> gradient;
  for (const AlgorithmInfo& a : algorithm_catalog()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name << " is registered twice";
    EXPECT_EQ(&find_algorithm(a.name), &a);
    EXPECT_FALSE(a.description.empty()) << a.name;
    EXPECT_FALSE(a.paper.empty()) << a.name;
    ASSERT_TRUE(a.params && a.make) << a.name;
    for (const ParamDoc& p : a.params()) EXPECT_FALSE(p.doc.empty()) << a.name << "." << p.key;
    if (a.runs_from_defaults) {
      EXPECT_NE(a.make(YAML::Node(), Source{}, nullptr), nullptr) << a.name;
    } else {  // the trait says so: its defaults alone are refused (script: no module path)
      EXPECT_THROW(a.make(YAML::Node(), Source{}, nullptr), ConfigError) << a.name;
    }
    if (a.exchanges_gradients && a.runs_from_defaults) gradient.push_back(a.name);
  }
  EXPECT_EQ(gradient_algorithm_names(), gradient);
  EXPECT_GE(gradient.size(), 1u);
}

// A lossless setting, or the reason there is none; each setting builds the algorithm.
TEST(Catalog, EveryAlgorithmStatesItsLosslessSettingsOrWhyItHasNone) {
  for (const AlgorithmInfo& a : algorithm_catalog()) {
    EXPECT_NE(a.lossless.empty(), a.not_lossless_because.empty())
        << a.name << ": lossless settings, or the reason there are none (not both)";
    for (const LosslessSetting& s : a.lossless) {
      EXPECT_NO_THROW(a.make(YAML::Load(s.params), Source{}, nullptr)) << a.name << " " << s.params;
      EXPECT_GE(s.tolerance, 0.0) << a.name;
      EXPECT_LT(s.tolerance, 0.1) << a.name << ": a distance that large is not dense SGD";
    }
  }
}

TEST(Catalog, CodecTraitsNameCodecsOfTheRegistry) {
  for (const AlgorithmInfo& a : algorithm_catalog())
    if (!a.codec.empty()) {
      EXPECT_NO_THROW(find_codec(a.codec)) << a.name << ": " << a.codec;
    }
}

// What after_step did on one rank at one step.
struct AfterStep {
  bool moved_params = false;
  bool communicated = false;
  bool changed_state = false;
};

std::string state_bytes(const Algorithm& alg) {
  AlgorithmState state;
  alg.save_state(state);
  std::string out;
  for (const auto& [key, t] : state) {
    if (!t.defined()) continue;
    const at::Tensor c = t.detach().cpu().contiguous();
    out += key + "=" +
           std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()) + ";";
  }
  return out;
}

// `steps` plain SGD steps of algorithm `name` (default parameters) on 2 in-process ranks with
// gradients that differ by rank, far past every warm-up and switch epoch: per rank and step,
// whether reduce_gradients changed the bucket, and what after_step did.
struct Observed {
  std::vector<std::vector<AfterStep>> after;       // [rank][step]
  std::vector<std::vector<int64_t>> reduce_bytes;  // [rank][step]
  std::vector<std::vector<bool>> reduce_changed;   // [rank][step]
};

Observed observe(const std::string& name, int steps) {
  Observed o;
  o.after.resize(2);
  o.reduce_changed.resize(2);
  run_ranks(2, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const auto r = static_cast<size_t>(comm.rank());
    auto alg = testing::make_algorithm(name);
    auto gen = make_generator(5, 0, 0);
    std::vector<NamedTensor> params = {{"w", torch::randn({12, 10}, gen)},
                                       {"b", torch::randn({30}, gen)}};
    alg->setup(params, comm);
    for (int64_t step = 0; step < steps; ++step) {
      GradBucket bucket = testing::bucket_of_params(params);
      for (size_t i = 0; i < bucket.entries.size(); ++i)
        bucket.entries[i].grad.copy_(
            torch::randn(bucket.entries[i].grad.sizes(), make_generator(77, comm.rank(), step, i)));
      const at::Tensor before_reduce = bucket.flat.clone();
      StepContext ctx;
      ctx.step = step;
      ctx.epoch = 100 + step;
      ctx.steps_per_epoch = 1;
      ctx.first_decay_epoch = 0;
      ctx.lr = ctx.base_lr = 0.1;
      ctx.seed = 9;
      comm.reset_step();
      alg->reduce_gradients(bucket, comm, ctx);
      o.reduce_changed[r].push_back(!torch::equal(bucket.flat, before_reduce));
      for (size_t i = 0; i < params.size(); ++i) params[i].tensor.sub_(bucket.entries[i].grad, 0.1);
      std::vector<at::Tensor> before;
      for (const auto& p : params) before.push_back(p.tensor.clone());
      const std::string state_before = state_bytes(*alg);
      comm.reset_step();
      alg->after_step(params, {}, comm, ctx);
      AfterStep a;
      for (size_t i = 0; i < params.size(); ++i)
        a.moved_params = a.moved_params || !torch::equal(params[i].tensor, before[i]);
      a.communicated = comm.step().calls > 0;
      a.changed_state = state_bytes(*alg) != state_before;
      o.after[r].push_back(a);
    }
  });
  return o;
}

// acts_after_step is set exactly where after_step acts: an algorithm without it leaves the
// parameters, the communicator and its own state alone after every step; one with it changes one
// of them at some step within 20 (local SGD averages every 16 steps by default).
TEST(Catalog, ActsAfterStepIsSetWhereAfterStepActs) {
  for (const std::string& name : gradient_algorithm_names()) {
    const AlgorithmInfo& a = find_algorithm(name);
    const Observed o = observe(name, 20);
    bool acted = false;
    for (const auto& rank : o.after)
      for (const AfterStep& s : rank) {
        acted = acted || s.moved_params || s.communicated || s.changed_state;
        if (!a.acts_after_step) {
          EXPECT_FALSE(s.moved_params) << name << ": after_step moved the parameters";
          EXPECT_FALSE(s.communicated) << name << ": after_step communicated";
          EXPECT_FALSE(s.changed_state) << name << ": after_step changed the algorithm's state";
        }
      }
    if (a.acts_after_step) {
      EXPECT_TRUE(acted) << name << ": after_step never acted";
    }
  }
}

// A gossip algorithm trains through the trainer and acts after the step; its reduce_gradients
// leaves the gradient local: the bucket as it was (D-PSGD sends its parameters there, to overlap
// the exchange with backward, but the gradient is not averaged). Every other algorithm's
// reduce_gradients writes an update of its own on 2 ranks.
TEST(Catalog, GossipAlgorithmsLeaveTheGradientLocal) {
  for (const std::string& name : gradient_algorithm_names()) {
    const AlgorithmInfo& a = find_algorithm(name);
    if (a.gossip) {
      EXPECT_TRUE(a.acts_after_step) << name;
    }
    const Observed o = observe(name, 3);
    bool changed = false;
    for (size_t r = 0; r < o.reduce_changed.size(); ++r)
      for (size_t t = 0; t < o.reduce_changed[r].size(); ++t) {
        changed = changed || o.reduce_changed[r][t];
        if (a.gossip) {
          EXPECT_FALSE(o.reduce_changed[r][t]) << name << " rank " << r << " step " << t;
        }
      }
    if (!a.gossip && !a.acts_after_step) {
      EXPECT_TRUE(changed) << name << ": no update written";
    }
  }
}

}  // namespace
}  // namespace cedar
