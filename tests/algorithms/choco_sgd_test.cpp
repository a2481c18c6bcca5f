// CHOCO-SGD (algorithms/choco_sgd.cpp) against an independent oracle of Koloskova et al.'s
// Algorithm 2 on a dense W (every rank's public copy x̂ kept explicitly, top-k written as
// "zero all but the k largest magnitudes"); its bytes per neighbour per step for each codec from
// the codecs' definitions; and its relation to D-PSGD: with the identity codec and γ = 1 a CHOCO
// step is x ← W (x − η g), which equals D-PSGD's W x − η g whenever every rank has the same g.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <string>
#include <vector>

#include "algorithms/codecs/codec_registry.h"
#include "algorithms/gossip/topology.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::on_ranks;
using Models = std::vector<std::vector<std::vector<at::Tensor>>>;  // [rank][step][tensor]

constexpr double kLr = 0.1;

std::vector<NamedTensor> initial(int r) {
  auto gen = make_generator(31, r, 0);
  return {{"w", torch::randn({6, 5}, gen)}, {"b", torch::randn({8}, gen)}};
}

// Gradients that depend on the local model and the rank: g = x - c_r.
std::vector<at::Tensor> local_grads(int r, int64_t t, const std::vector<NamedTensor>& ps) {
  std::vector<at::Tensor> g;
  for (size_t i = 0; i < ps.size(); ++i) {
    auto gen = make_generator(41, r, t, i);
    g.push_back(ps[i].tensor - torch::randn(ps[i].tensor.sizes(), gen));
  }
  return g;
}

// The same gradients on every rank (at its own model), for the D-PSGD correspondence.
std::vector<at::Tensor> shared_grads(int, int64_t t, const std::vector<NamedTensor>& ps) {
  std::vector<at::Tensor> g;
  for (size_t i = 0; i < ps.size(); ++i) {
    auto gen = make_generator(43, 0, t, i);
    g.push_back(torch::randn(ps[i].tensor.sizes(), gen));
  }
  return g;
}

Models train(int ranks, const std::string& name, const std::string& yaml, int steps,
             const testing::TrainGradsOf& grads,
             std::vector<std::vector<CommCounters>>* comm = nullptr) {
  auto out = on_ranks(ranks, [&](Communicator& c) {
    auto alg = testing::make_algorithm(name, yaml);
    auto params = initial(c.rank());
    alg->setup(params, c);
    std::pair<std::vector<std::vector<at::Tensor>>, std::vector<CommCounters>> r;
    for (const auto& s :
         testing::train_steps(*alg, params, c, 0, steps, grads, testing::StepOptions(3, 0, kLr))) {
      r.first.push_back(s.params);
      r.second.push_back(s.comm);
    }
    return r;
  });
  Models models;
  for (auto& [m, counters] : out) {
    models.push_back(m);
    if (comm) comm->push_back(counters);
  }
  return models;
}

// Algorithm 2 on all ranks at once: x½ = x - η g; q_r = Q(x½_r - x̂_r); x̂_r += q_r;
// x_r = x½_r + γ Σ_j W_rj (x̂_j - x̂_r).
Models oracle(int p, double gamma, const std::function<at::Tensor(const at::Tensor&)>& q,
              int steps) {
  const at::Tensor w = mixing_matrix(make_topology("ring", p)).to(torch::kFloat);
  std::vector<std::vector<at::Tensor>> x, hat;
  for (int r = 0; r < p; ++r) {
    std::vector<at::Tensor> xs, hs;
    for (const auto& t : initial(r)) {
      xs.push_back(t.tensor.clone());
      hs.push_back(torch::zeros_like(t.tensor));
    }
    x.push_back(xs);
    hat.push_back(hs);
  }
  Models out(static_cast<size_t>(p));
  for (int t = 0; t < steps; ++t) {
    for (int r = 0; r < p; ++r) {
      std::vector<NamedTensor> named = initial(r);
      for (size_t i = 0; i < named.size(); ++i) named[i].tensor = x[r][i];
      const auto g = local_grads(r, t, named);
      for (size_t i = 0; i < g.size(); ++i) {
        x[r][i] = x[r][i] - kLr * g[i];
        hat[r][i] = hat[r][i] + q((x[r][i] - hat[r][i]).reshape({-1})).view_as(x[r][i]);
      }
    }
    for (int r = 0; r < p; ++r) {
      for (size_t i = 0; i < x[r].size(); ++i) {
        at::Tensor gossip = torch::zeros_like(x[r][i]);
        for (int j = 0; j < p; ++j) gossip += w[r][j].item<float>() * (hat[j][i] - hat[r][i]);
        x[r][i] = x[r][i] + gamma * gossip;
      }
      out[static_cast<size_t>(r)].push_back(x[r]);
    }
  }
  return out;
}

void expect_close(const Models& got, const Models& want, double tol, const std::string& what) {
  for (size_t r = 0; r < want.size(); ++r)
    for (size_t t = 0; t < want[r].size(); ++t)
      for (size_t i = 0; i < want[r][t].size(); ++i)
        EXPECT_TRUE(torch::allclose(got[r][t][i], want[r][t][i], tol, tol))
            << what << ": rank " << r << " step " << t << " tensor " << i << ", max difference "
            << (got[r][t][i] - want[r][t][i]).abs().max().item<double>();
}

TEST(ChocoSgd, IdentityCodecFollowsAlgorithm2) {
  const auto got = train(4, "choco-sgd", "{compressor: identity, gamma: 0.5}", 5, local_grads);
  expect_close(got,
               oracle(
                   4, 0.5, [](const at::Tensor& v) { return v.clone(); }, 5),
               1e-5, "identity, gamma 0.5");
}

TEST(ChocoSgd, TopKCodecFollowsAlgorithm2) {
  // k = ceil(0.2 d): 6 of the 30 weights, 2 of the 8 biases.
  auto topk = [](const at::Tensor& v) { return testing::topk_dense(v, (v.numel() * 2 + 9) / 10); };
  const auto got =
      train(4, "choco-sgd", "{compressor: topk, ratio: 0.2, gamma: 0.3}", 6, local_grads);
  expect_close(got, oracle(4, 0.3, topk, 6), 1e-5, "top-k 20%, gamma 0.3");
}

TEST(ChocoSgd, IdentityWithGammaOneEqualsDpsgdWhenGradientsAgree) {
  // The ranks start from different models; only the update direction is shared.
  const auto choco = train(4, "choco-sgd", "{compressor: identity, gamma: 1}", 6, shared_grads);
  const auto dpsgd = train(4, "dpsgd", "{topology: ring}", 6, shared_grads);
  expect_close(choco, dpsgd, 1e-5, "CHOCO (identity, gamma 1) vs D-PSGD");
  // With rank-dependent gradients they differ: the mixing comes after the local step in CHOCO.
  const auto c2 = train(4, "choco-sgd", "{compressor: identity, gamma: 1}", 2, local_grads);
  const auto d2 = train(4, "dpsgd", "{topology: ring}", 2, local_grads);
  EXPECT_FALSE(torch::allclose(c2[0][1][0], d2[0][1][0], 1e-4, 1e-4));
}

TEST(ChocoSgd, BytesPerStepAreTheCodecPayloadToEachNeighbour) {
  // Tensors of 30 and 8 values on a ring of 4: two neighbours, one message each per step.
  struct Case {
    std::string yaml;
    int64_t bytes;  // one message
  };
  const std::vector<Case> cases = {
      {"{compressor: identity}", 4 * (30 + 8)},
      {"{compressor: sign}", (4 + 4) + (4 + 1)},            // scale + ceil(d/8) bits
      {"{compressor: topk, ratio: 0.1}", 8 * (3 + 1)},      // (int32, fp32) per kept value
      {"{compressor: randomk, ratio: 0.25}", 8 * (8 + 2)},  // k = ceil(0.25 d)
      // 4 bits: one fp32 norm per 512 values, 5 bits per value.
      {"{compressor: qsgd, bits: 4}", (4 + (30 * 5 + 7) / 8) + (4 + 5)},
  };
  for (const auto& c : cases) {
    std::vector<std::vector<CommCounters>> comm;
    const auto models = train(4, "choco-sgd", c.yaml, 3, local_grads, &comm);
    for (const auto& rank : comm)
      for (const auto& step : rank) {
        EXPECT_EQ(step.payload_bytes, 2 * c.bytes) << c.yaml;
        EXPECT_EQ(step.calls, 2) << c.yaml << ": one sendrecv per neighbour";
      }
    for (const auto& rank : models)
      for (const auto& t : rank.back())
        EXPECT_TRUE(torch::isfinite(t).all().item<bool>()) << c.yaml;
  }
}

TEST(ChocoSgd, GossipContractsTheModelsWithEveryCodec) {
  // No gradient: the models only mix; the consensus distance must shrink over 30 steps.
  auto zero = [](int, int64_t, const std::vector<NamedTensor>& ps) {
    std::vector<at::Tensor> g;
    for (const auto& p : ps) g.push_back(torch::zeros_like(p.tensor));
    return g;
  };
  auto distance = [](const Models& m, size_t t) {
    double d = 0;
    for (size_t i = 0; i < m[0][t].size(); ++i) {
      at::Tensor mean = torch::zeros_like(m[0][t][i]);
      for (const auto& r : m) mean += r[t][i] / static_cast<double>(m.size());
      for (const auto& r : m) d += (r[t][i] - mean).pow(2).sum().item<double>();
    }
    return d;
  };
  // Every codec of the registry (sign: the scaled sign), half the coordinates for the sparse ones.
  for (const std::string& codec : codec_names()) {
    const std::string yaml = "{compressor: " + codec + ", ratio: 0.5, bits: 4, gamma: 0.3}";
    const auto m = train(4, "choco-sgd", yaml, 30, zero);
    const double first = distance(m, 0), last = distance(m, 29);
    EXPECT_LT(last, 0.1 * first) << yaml;
  }
}

// `compressor` takes a codec of the registry; another name is refused, naming them.
TEST(ChocoSgd, CompressorIsACodecOfTheRegistry) {
  try {
    testing::make_algorithm("choco-sgd", "{compressor: zip}");
    ADD_FAILURE() << "an unknown codec was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("zip"), std::string::npos) << what;
    for (const auto& name : codec_names()) EXPECT_NE(what.find(name), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace cedar
