// 1-bit Adam (Tang et al., ICML 2021): the warm-up against LibTorch's own AdamW on the averaged
// gradient through the trainer's optimizer; after the freeze, Algorithm 1 in plain LibTorch bit for
// bit on 1 to 4 ranks (v unchanged, the ranks' momenta compressed at the workers and at the
// chunks' servers, every rank the same update); the compressed allreduce's error-feedback
// identities; bytes per step from the wire format and the shapes; resuming from the saved state
// across the freeze; and the optimizer settings it refuses.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/exchange/onebit_allreduce.h"
#include "comm/bus_bytes.h"
#include "runner/train/optimizer.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
namespace {

using testing::ceil_div;
using testing::make_algorithm;
using testing::same_bits;

// √(Σ x² / L) summed in fp64, rounded to fp32: the paper's ‖x‖₂/‖sign(x)‖₂.
float onebit_rms(const at::Tensor& x) {
  if (x.numel() == 0) return 0.0f;
  return static_cast<float>(
      std::sqrt(x.to(torch::kDouble).pow(2).sum().item<double>() / static_cast<double>(x.numel())));
}

// C(x) = onebit_rms(x)·sign(x), sign(0) = +1: the paper's 1-bit compressor.
at::Tensor onebit_c(const at::Tensor& x) {
  const float s = onebit_rms(x);
  return torch::where(x >= 0, torch::full({}, s), torch::full({}, -s));
}

// The paper's compression stage (Algorithm 1, lines 6-10) for one tensor on n workers: worker
// errors e[i], the server error ebar of the whole tensor (rank j serves elements
// [j·c, (j + 1)·c), c = 8·⌈d / 8n⌉), both updated; returns the common compressed average.
at::Tensor paper_compressed_average(const std::vector<at::Tensor>& x, std::vector<at::Tensor>& e,
                                    at::Tensor& ebar) {
  const int n = static_cast<int>(x.size());
  const int64_t d = x[0].numel(), c = 8 * ceil_div(d, 8 * n);
  std::vector<at::Tensor> sent;
  for (int i = 0; i < n; ++i) {
    const at::Tensor p = e[i] + x[i].reshape({-1});
    sent.push_back(onebit_c(p));
    e[i] = p - sent.back();
  }
  at::Tensor out = torch::empty({d});
  for (int j = 0; j < n; ++j) {
    const int64_t begin = std::min(d, j * c), count = std::min(d, begin + c) - begin;
    at::Tensor y = torch::zeros({count});
    for (int i = 0; i < n; ++i) y = y + sent[i].narrow(0, begin, count);
    if (n > 1) y = y / n;
    const at::Tensor q = ebar.narrow(0, begin, count) + y;
    const at::Tensor sent_back = onebit_c(q);
    ebar.narrow(0, begin, count).copy_(q - sent_back);
    out.narrow(0, begin, count).copy_(sent_back);
  }
  return out;
}

const std::vector<std::vector<int64_t>> kOnebitShapes = {{12, 10}, {30}, {5}};

at::Tensor onebit_grad(int rank, int64_t step, size_t i) {
  return torch::randn(kOnebitShapes[i], make_generator(77, rank, step, i)) * (1.0 + rank);
}
std::vector<at::Tensor> onebit_grads(int rank, int64_t step) {
  std::vector<at::Tensor> g;
  for (size_t i = 0; i < kOnebitShapes.size(); ++i) g.push_back(onebit_grad(rank, step, i));
  return g;
}

TEST(OnebitAdam, WarmupIsAdamWOnTheAveragedGradient) {
  constexpr int kSteps = 8;
  constexpr double kLr = 0.05, kDecay = 1e-2;
  // Two ranks through the trainer's optimizer for it (sgd with the algorithm's momentum plan);
  // optimizer.momentum and nesterov are set and must not act.
  auto params = testing::on_ranks(2, [&](Communicator& comm) {
    auto alg = make_algorithm("onebit-adam", "{beta1: 0.8, beta2: 0.95, eps: 1.0e-6}");
    OptimizerConfig cfg;
    cfg.momentum = 0.9;
    cfg.nesterov = true;
    cfg.weight_decay = kDecay;
    check_optimizer_for(cfg, *alg, "onebit-adam");
    std::vector<NamedTensor> p = {{"w", torch::randn({5, 4}, make_generator(3, 0, 0))}};
    GradBucket b = testing::bucket_of_params(p);
    auto opt = make_optimizer(cfg, p, {b.entries[0].grad}, momentum_plan(*alg));
    alg->setup(p, comm);
    std::vector<at::Tensor> out;
    for (int64_t t = 0; t < kSteps; ++t) {
      b.entries[0].grad.copy_(torch::randn({5, 4}, make_generator(8, comm.rank(), t)));
      StepContext ctx;
      ctx.step = t;
      ctx.lr = kLr;
      alg->reduce_gradients(b, comm, ctx);
      EXPECT_EQ(ctx.stats.at("onebit-adam.compressing"), 0.0);
      opt->step(kLr);
      out.push_back(p[0].tensor.clone());
    }
    return out;
  });
  auto w = torch::randn({5, 4}, make_generator(3, 0, 0)).requires_grad_(true);
  torch::optim::AdamW ref(
      {w}, torch::optim::AdamWOptions(kLr).betas({0.8, 0.95}).eps(1e-6).weight_decay(kDecay));
  for (int64_t t = 0; t < kSteps; ++t) {
    w.mutable_grad() = (torch::randn({5, 4}, make_generator(8, 0, t)) +
                        torch::randn({5, 4}, make_generator(8, 1, t))) /
                       2;
    ref.step();
    EXPECT_TRUE(torch::equal(params[0][t], params[1][t])) << "ranks differ at step " << t;
    EXPECT_TRUE(torch::allclose(params[0][t], w.detach(), 1e-6, 1e-7))
        << "step " << t << ": max difference "
        << (params[0][t] - w.detach()).abs().max().item<double>();
  }
}

TEST(OnebitAdam, WithoutBiasCorrectionTheUpdateIsDeepSpeeds) {
  auto alg = make_algorithm("onebit-adam", "{bias_correction: false}");
  const at::Tensor g = torch::randn({33}, make_generator(4, 0, 0));
  // Step 1: m = 0.1·g, v = 0.001·g², u = m / (√v + ε), no division by 1 − β^t.
  const at::Tensor u = testing::reduce_once(*alg, g, 0);
  EXPECT_TRUE(torch::allclose(u, 0.1 * g / ((0.001 * g * g).sqrt() + 1e-8), 1e-6, 0));
  EXPECT_GT(u.abs().min().item<float>(), 3.0f) << "sqrt(1000)/10: the uncorrected first step";
}

class OnebitAdamRanks : public ::testing::TestWithParam<int> {};

// Algorithm 1 in plain LibTorch: Adam on the average for freeze_step = 3 steps, then v frozen and
// the momenta compressed; the algorithm writes u = (m̄ / c1) / (√v / √c2_w + ε) bit for bit.
TEST_P(OnebitAdamRanks, FollowsAlgorithmOneBitForBit) {
  const int n = GetParam();
  constexpr int kSteps = 7, kFreeze = 3;
  constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  auto res = testing::run_steps(n, "onebit-adam", "{freeze_step: 3}", kSteps, onebit_grads);
  testing::expect_ranks_agree(res);
  for (size_t i = 0; i < kOnebitShapes.size(); ++i) {
    at::Tensor m = torch::zeros(kOnebitShapes[i]), v = torch::zeros(kOnebitShapes[i]);
    const int64_t d = m.numel();
    std::vector<at::Tensor> e(n, torch::zeros({d}));
    at::Tensor ebar = torch::zeros({d});
    at::Tensor frozen_v;
    for (int64_t t = 1; t <= kSteps; ++t) {
      const double c1 = 1 - std::pow(b1, t);
      if (t <= kFreeze) {
        at::Tensor sum = onebit_grad(0, t - 1, i).clone();
        for (int r = 1; r < n; ++r) sum.add_(onebit_grad(r, t - 1, i));
        const at::Tensor g = n > 1 ? sum / n : sum;
        m = m.mul(b1).add(g, 1 - b1);
        v = v.mul(b2).addcmul(g, g, 1 - b2);
        if (t == kFreeze) frozen_v = v.clone();
      } else {
        std::vector<at::Tensor> local;
        for (int r = 0; r < n; ++r)
          local.push_back(m.mul(b1).add(onebit_grad(r, t - 1, i), 1 - b1));
        m = paper_compressed_average(local, e, ebar).view(kOnebitShapes[i]);
        EXPECT_TRUE(torch::equal(v, frozen_v)) << "v moved after the freeze";
      }
      const double c2 = 1 - std::pow(b2, std::min<int64_t>(t, kFreeze));
      const at::Tensor u = m / c1 / (v.sqrt() / std::sqrt(c2) + eps);
      for (int r = 0; r < n; ++r)
        EXPECT_TRUE(same_bits(res[r][t - 1].grads[i], u))
            << n << " ranks, rank " << r << " step " << t << " tensor " << i << ": max difference "
            << (res[r][t - 1].grads[i] - u).abs().max().item<double>();
      EXPECT_EQ(res[0][t - 1].stats.at("onebit-adam.compressing"), t > kFreeze ? 1.0 : 0.0);
    }
  }
}

// Bytes per step: warm-up, one fp32 allreduce of the bucket; then S = 4·K + Σ c_k/8 bytes per
// message (K fp32 scales, a chunk of c_k = 8·⌈d_k / 8n⌉ sign bits per tensor), n − 1 sendrecvs and
// one allgather of S bytes.
TEST_P(OnebitAdamRanks, BytesPerStepFollowTheWireFormat) {
  const int n = GetParam();
  auto res = testing::run_steps(n, "onebit-adam", "{freeze_step: 2}", 4, onebit_grads);
  const int64_t dense = 4 * (120 + 30 + 5);
  int64_t s = 4 * 3;
  for (int64_t d : {120, 30, 5}) s += ceil_div(d, 8 * n);  // c_k / 8 bytes of bits
  for (int r = 0; r < n; ++r)
    for (int64_t t = 0; t < 4; ++t) {
      const CommCounters& c = res[r][t].comm;
      if (n == 1) {
        EXPECT_EQ(c.payload_bytes, 0) << "one rank sends nothing, step " << t;
        continue;
      }
      EXPECT_EQ(c.payload_bytes, t < 2 ? dense : n * s) << n << " ranks, step " << t;
      EXPECT_EQ(c.bus_bytes, t < 2 ? allreduce_bus_bytes(dense, n) : 2 * (n - 1) * s);
      EXPECT_EQ(c.calls, t < 2 ? 1 : n) << "n - 1 sendrecvs and one allgather";
    }
}

INSTANTIATE_TEST_SUITE_P(OneToFour, OnebitAdamRanks, ::testing::Values(1, 2, 3, 4));

// On ResNet-20's 269,722 values after the freeze: about 32x less than dense's fp32 allreduce, both
// in payload (4·D against 2·S on 2 ranks) and on the wire.
TEST(OnebitAdam, ResNet20BytesAfterTheFreeze) {
  const auto shapes = testing::resnet20_shapes();
  auto grads = [&](int r, int64_t t) {
    std::vector<at::Tensor> g;
    for (const auto& shape : shapes) g.push_back(torch::randn(shape, make_generator(11, r, t)));
    return g;
  };
  auto res = testing::run_steps(2, "onebit-adam", "{freeze_step: 1}", 2, grads);
  int64_t values = 0, s = 0;
  for (const auto& shape : shapes) {
    const int64_t d = torch::zeros(shape).numel();
    values += d;
    s += 4 + ceil_div(d, 16);
  }
  ASSERT_EQ(values, 269722);
  EXPECT_EQ(res[0][0].comm.payload_bytes, 4 * values);
  EXPECT_EQ(res[0][1].comm.payload_bytes, 2 * s);
  EXPECT_EQ(res[0][1].comm.bus_bytes, 2 * s);
  EXPECT_GT(4.0 * values / static_cast<double>(2 * s), 31.0);
  EXPECT_GT(static_cast<double>(res[0][0].comm.bus_bytes) / static_cast<double>(2 * s), 31.0);
}

// The exchange alone on 3 ranks: per call, the worker's memory is the residual of C exactly; over
// the calls, what came out plus what the memories hold is what went in (nothing lost).
TEST(OnebitAdam, CompressedAllreduceKeepsEveryResidual) {
  constexpr int n = 3, kCalls = 6;
  const int64_t d = 203;
  auto x_of = [](int r, int64_t t) { return torch::randn({d}, make_generator(21, r, t)); };
  struct Seen {
    std::vector<at::Tensor> out;
    at::Tensor worker, server;
  };
  auto seen = testing::on_ranks(n, [&](Communicator& comm) {
    OnebitErrors errors;
    Seen s;
    for (int64_t t = 0; t < kCalls; ++t) {
      at::Tensor x = x_of(comm.rank(), t);
      const at::Tensor p = (errors.worker.defined() ? errors.worker : torch::zeros({d})) + x;
      onebit_allreduce({x}, {&errors}, comm);
      EXPECT_TRUE(same_bits(errors.worker, p - onebit_c(p))) << "worker memory, call " << t;
      s.out.push_back(x);
    }
    s.worker = errors.worker;
    s.server = errors.server;
    return s;
  });
  at::Tensor in_sum = torch::zeros({d}, torch::kDouble), out_sum = in_sum.clone();
  at::Tensor worker_sum = in_sum.clone();
  for (int r = 0; r < n; ++r) {
    for (int64_t t = 0; t < kCalls; ++t) {
      EXPECT_TRUE(torch::equal(seen[r].out[t], seen[0].out[t])) << "rank " << r << " call " << t;
      in_sum += x_of(r, t).to(torch::kDouble) / n;
    }
    worker_sum += seen[r].worker.to(torch::kDouble) / n;
  }
  for (int64_t t = 0; t < kCalls; ++t) out_sum += seen[0].out[t].to(torch::kDouble);
  // The server memories in chunk order: c = 8·⌈203 / 24⌉ = 72, chunks of 72, 72 and 59.
  std::vector<at::Tensor> chunks;
  for (int r = 0; r < n; ++r) chunks.push_back(seen[r].server.to(torch::kDouble));
  ASSERT_EQ(chunks[2].numel(), 59);
  const at::Tensor server = torch::cat(chunks);
  EXPECT_TRUE(torch::allclose(out_sum, in_sum - worker_sum - server, 0, 1e-5))
      << (out_sum - (in_sum - worker_sum - server)).abs().max().item<double>();
}

TEST(OnebitAdam, ChunksAreWholeBytesAndEmptyPastTheEnd) {
  EXPECT_EQ(onebit_chunk_elements(30, 3), 16);
  EXPECT_EQ(onebit_chunk(30, 3, 1).begin, 16);
  EXPECT_EQ(onebit_chunk(30, 3, 1).count, 14);
  EXPECT_EQ(onebit_chunk(30, 3, 2).count, 0);
  EXPECT_EQ(onebit_chunk(5, 4, 0).count, 5);
  EXPECT_EQ(onebit_chunk(5, 4, 3).begin, 5);
  EXPECT_EQ(onebit_chunk(64, 2, 1).begin, 32);
}

// Stopping before the freeze (step 2) or after it (step 5) and resuming from the saved state
// (m, v, the step counts, both error memories) continues bit for bit.
TEST(OnebitAdam, ResumesBitwiseAcrossTheFreeze) {
  const std::string yaml = "{freeze_step: 3}";
  auto grads = [](int rank, int64_t step, const std::vector<NamedTensor>& p) {
    std::vector<at::Tensor> g;
    for (size_t i = 0; i < p.size(); ++i)
      g.push_back(torch::randn(p[i].tensor.sizes(), make_generator(7, rank, step, i)) +
                  0.1 * p[i].tensor);
    return g;
  };
  auto initial = [] {
    return std::vector<NamedTensor>{{"w", torch::randn({12, 10}, make_generator(5, 0, 0))},
                                    {"b", torch::randn({30}, make_generator(5, 0, 1))}};
  };
  for (int64_t stop : {2, 5}) {
    run_ranks(2, [&](Communicator& comm) {
      auto alg = make_algorithm("onebit-adam", yaml);
      auto params = initial();
      alg->setup(params, comm);
      auto expected = testing::train_steps(*alg, params, comm, 0, 8, grads);
      auto first = make_algorithm("onebit-adam", yaml);
      auto params2 = initial();
      first->setup(params2, comm);
      testing::train_steps(*first, params2, comm, 0, stop, grads);
      AlgorithmState state;
      first->save_state(state);
      if (stop > 3) {
        EXPECT_TRUE(state.count("worker_error.w") && state.count("server_error.b"));
      }
      auto second = make_algorithm("onebit-adam", yaml);
      second->setup(params2, comm);
      second->load_state(state);
      auto resumed = testing::train_steps(*second, params2, comm, stop, 8, grads);
      for (int64_t t = stop; t < 8; ++t)
        for (size_t i = 0; i < params2.size(); ++i)
          EXPECT_TRUE(torch::equal(resumed[t - stop].params[i], expected[t].params[i]))
              << "stopped at " << stop << ", rank " << comm.rank() << " step " << t;
    });
  }
}

TEST(OnebitAdam, RunsWithPlainSgdOnly) {
  auto alg = make_algorithm("onebit-adam");
  EXPECT_TRUE(alg->applies_momentum());
  EXPECT_EQ(alg->own_momentum(), 0.9);
  EXPECT_EQ(make_algorithm("onebit-adam", "{beta1: 0.5}")->own_momentum(), 0.5);
  EXPECT_TRUE(make_algorithm("hierarchical", "{inter: onebit-adam}")->needs_plain_sgd());
  for (const std::string name : {"adam", "adamw", "lars"}) {
    OptimizerConfig cfg;
    cfg.name = name;
    try {
      check_optimizer_for(cfg, *alg, "onebit-adam");
      ADD_FAILURE() << "accepted optimizer.name " << name;
    } catch (const ConfigError& e) {
      EXPECT_NE(
          std::string(e.what()).find("optimizer.name '" + name + "' with algorithm onebit-adam"),
          std::string::npos)
          << e.what();
    }
  }
  OptimizerConfig beta;
  beta.beta2 = 0.98;
  try {
    check_optimizer_for(beta, *alg, "onebit-adam");
    ADD_FAILURE() << "accepted an optimizer.beta2 it does not read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("set algorithm.beta2"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_optimizer_for(OptimizerConfig{}, *alg, "onebit-adam"));
  EXPECT_THROW(make_algorithm("onebit-adam", "{freeze_step: 0}"), ConfigError);
  EXPECT_THROW(make_algorithm("onebit-adam", "{beta2: 1}"), ConfigError);
  EXPECT_THROW(make_algorithm("onebit-adam", "{momentum: 0.9}"), ConfigError);
}

}  // namespace
}  // namespace cedar
