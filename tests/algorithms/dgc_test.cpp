// Deep Gradient Compression (Lin et al., ICLR 2018): warm-up schedule, sampled-threshold
// selection (superset of the exact top-k, at most 1.3k), momentum correction and factor masking
// against hand computations, local clipping, a training oracle, multi-rank agreement and bytes.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <iostream>
#include <mutex>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/compressor.h"
#include "comm/bus_bytes.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {

namespace {

using testing::bucket_of_shapes;
using testing::make_algorithm;
using testing::randn_seeded;

torch::Tensor flat(GradBucket& b, size_t i) { return b.entries[i].grad.reshape({-1}); }

// S (mask of sent coordinates) must contain every coordinate of the exact top-k of |v| and
// have between k and 1.3k elements.
void expect_topk_superset(const torch::Tensor& sent, const torch::Tensor& v, int64_t k) {
  const int64_t count = sent.sum().item<int64_t>();
  EXPECT_GE(count, k);
  EXPECT_LE(double(count), 1.3 * double(k));
  auto top = std::get<1>(torch::topk(v.abs(), k));
  EXPECT_TRUE(sent.index_select(0, top).all().item<bool>()) << "a top-k coordinate was not sent";
}

TEST(Dgc, WarmupSchedule) {
  auto algo = make_algorithm("dgc", "{}");
  LocalCommunicator comm;
  auto bucket = bucket_of_shapes({{10, 10}});
  const double expect[] = {0.75, 0.9375, 0.984375, 0.99609375, 0.999, 0.999};
  for (int epoch = 0; epoch <= 5; ++epoch) {
    StepContext ctx;
    ctx.epoch = epoch;
    ctx.steps_per_epoch = 10;
    ctx.step = epoch * 10;
    bucket.flat.copy_(randn_seeded(100, epoch));
    algo->reduce_gradients(bucket, comm, ctx);
    EXPECT_DOUBLE_EQ(ctx.stats["dgc.sparsity"], expect[epoch]) << "epoch " << epoch;
  }
  EXPECT_NEAR(expect[3], 0.996, 1e-3);  // the paper's rounded 99.6%
  auto custom = make_algorithm("dgc", "{sparsity: 0.99, warmup_epochs: 2}");
  const double expect2[] = {0.75, 0.9375, 0.99};
  for (int epoch = 0; epoch <= 2; ++epoch) {
    StepContext ctx;
    ctx.epoch = epoch;
    custom->reduce_gradients(bucket, comm, ctx);
    EXPECT_DOUBLE_EQ(ctx.stats["dgc.sparsity"], expect2[epoch]);
  }
}

// One step on 1M coordinates at 99.9% sparsity: the first step sends v = g at S, and S is a
// superset of the exact top-1000 with at most 1300 elements, for several distributions.
TEST(Dgc, SampledThresholdOnOneMillion) {
  const int64_t n = 1 << 20, k = 1049;  // ⌈0.001·2^20⌉
  for (int dist = 0; dist < 3; ++dist) {
    for (int seed = 0; seed < 3; ++seed) {
      auto algo = make_algorithm("dgc", "{warmup_epochs: 0}");
      LocalCommunicator comm;
      auto bucket = bucket_of_shapes({{1024, 1024}});
      auto g = randn_seeded(n, 500 + seed);
      if (dist == 1) g = g.exp() * g.sign();                                 // heavy tail
      if (dist == 2) g = g * (torch::arange(n) % 7 == 0).to(torch::kFloat);  // mostly zeros
      bucket.flat.copy_(g);
      StepContext ctx;
      ctx.seed = seed;
      algo->reduce_gradients(bucket, comm, ctx);
      auto out = flat(bucket, 0);
      auto sent = out.ne(0);
      expect_topk_superset(sent, g, k);
      EXPECT_TRUE(torch::equal(out.masked_select(sent), g.masked_select(sent)));
      EXPECT_EQ(ctx.stats["dgc.k"], k);
      EXPECT_EQ(ctx.stats["dgc.selected"], sent.sum().item<double>());
      EXPECT_EQ(ctx.stats["dgc.payload_bytes"], 8 * ctx.stats["dgc.selected"]);
    }
  }
}

// Three steps against the rule written out: u <- m u + g; v <- v + u; zero u and v where sent.
void momentum_oracle(bool masking, bool nesterov) {
  const double m = 0.9;
  auto algo =
      make_algorithm("dgc", std::string("{sparsity: 0.9, warmup_epochs: 0, momentum_masking: ") +
                                (masking ? "true" : "false") +
                                ", nesterov: " + (nesterov ? "true" : "false") + "}");
  LocalCommunicator comm;
  auto bucket = bucket_of_shapes({{40, 25}, {40}});
  auto u = torch::zeros({1000}), v = torch::zeros({1000}), ub = torch::zeros({40});
  std::vector<torch::Tensor> gs, sent;
  for (int step = 0; step < 3; ++step) {
    auto g = randn_seeded(1000, 10 + step), gb = randn_seeded(40, 20 + step);
    flat(bucket, 0).copy_(g);  // reshape of a contiguous view is a view
    bucket.entries[1].grad.copy_(gb);
    StepContext ctx;
    ctx.step = step;
    algo->reduce_gradients(bucket, comm, ctx);
    if (nesterov) {
      u = (u + g) * m;
      v = v + u + g;
      ub = (ub + gb) * m;
      EXPECT_TRUE(torch::allclose(bucket.entries[1].grad, ub + gb, 1e-6, 1e-6));
    } else {
      u = m * u + g;
      v = v + u;
      ub = m * ub + gb;
      EXPECT_TRUE(torch::allclose(bucket.entries[1].grad, ub, 1e-6, 1e-6));
    }
    auto out = flat(bucket, 0);
    auto s = out.ne(0);
    expect_topk_superset(s, v, 100);
    EXPECT_TRUE(torch::allclose(out, v * s, 1e-6, 1e-6)) << "step " << step;
    v.masked_fill_(s, 0);
    if (masking) u.masked_fill_(s, 0);
    gs.push_back(g);
    sent.push_back(s);
  }
  if (nesterov) return;
  // Hand computation at step 3 for coordinates never sent before: v = (1+m+m²)g0 + (1+m)g1 + g2.
  auto out = flat(bucket, 0);
  auto fresh = sent[2] & ~sent[0] & ~sent[1];
  ASSERT_GT(fresh.sum().item<int64_t>(), 0);
  auto hand = (1 + m + m * m) * gs[0] + (1 + m) * gs[1] + gs[2];
  EXPECT_TRUE(torch::allclose(out.masked_select(fresh), hand.masked_select(fresh), 1e-5, 1e-6));
  // Sent at step 0, not at step 1, sent again at step 2: masking forgets g0 entirely.
  auto again = sent[2] & sent[0] & ~sent[1];
  if (again.sum().item<int64_t>() > 0) {
    auto hand2 = masking ? (1 + m) * gs[1] + gs[2] : (m + m * m) * gs[0] + (1 + m) * gs[1] + gs[2];
    EXPECT_TRUE(torch::allclose(out.masked_select(again), hand2.masked_select(again), 1e-5, 1e-6));
  }
}

TEST(Dgc, MomentumCorrectionAndFactorMasking) { momentum_oracle(true, false); }
TEST(Dgc, MomentumCorrectionWithoutMasking) { momentum_oracle(false, false); }
TEST(Dgc, NesterovMomentumCorrection) { momentum_oracle(true, true); }

// Local clipping at clip_norm·P^(−1/2) before accumulation; the dense (bias) path clips the
// average at clip_norm.
class DgcRanks : public ::testing::TestWithParam<int> {};

TEST_P(DgcRanks, LocalClippingScalesToThresholdOverSqrtP) {
  const int n = GetParam();
  for (double scale : {10.0, 0.01}) {
    run_ranks(n, [&](Communicator& comm) {
      auto algo = make_algorithm("dgc", "{sparsity: 0.9, warmup_epochs: 0, clip_norm: 1.0}");
      auto bucket = bucket_of_shapes({{40, 25}, {40}});
      auto g = randn_seeded(1000, 1) * scale, gb = randn_seeded(40, 2) * 5;
      flat(bucket, 0).copy_(g);
      bucket.entries[1].grad.copy_(gb);
      StepContext ctx;
      algo->reduce_gradients(bucket, comm, ctx);
      const double thr = 1.0 / std::sqrt(double(n)), norm = g.norm().item<double>();
      const double f = norm > thr ? thr / norm : 1.0;
      EXPECT_EQ(norm > thr, scale > 1.0) << norm;
      EXPECT_EQ(f != 1.0, scale > 1.0);
      // The exact top-k is sent by every rank: there the average is the clipped gradient.
      auto top = std::get<1>(torch::topk(g.abs(), 100));
      auto out = flat(bucket, 0);
      EXPECT_TRUE(
          torch::allclose(out.index_select(0, top), g.index_select(0, top) * f, 1e-5, 1e-7));
      EXPECT_NEAR((out.index_select(0, top) / g.index_select(0, top)).mean().item<double>(), f,
                  1e-5);
      EXPECT_TRUE(torch::allclose(bucket.entries[1].grad, gb / gb.norm(), 1e-5, 1e-6));
    });
  }
}

// Every rank's gradient lives on its own rows (row i belongs to rank i mod P), so the average
// shows each rank's selection: it must be a superset of that rank's top-k, and the metered
// bytes must equal 8·|S| + 8 (allgatherv) + 4·64 (the bias allreduce).
TEST_P(DgcRanks, AgreeAndCountBytes) {
  const int n = GetParam();
  std::mutex mu;
  std::vector<torch::Tensor> results(n);
  std::vector<int64_t> selected(n), bus(n);
  auto grad_of = [n](int r, int64_t rows, int64_t cols, uint64_t seed) {
    auto own = (torch::arange(rows) % n == r).to(torch::kFloat).unsqueeze(1);
    return (randn_seeded(rows * cols, seed + r).view({rows, cols}) * own).reshape({-1});
  };
  run_ranks(n, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    const int r = comm.rank();
    auto algo = make_algorithm("dgc", "{sparsity: 0.99, warmup_epochs: 0}");
    auto bucket = bucket_of_shapes({{64, 50}, {64}, {30, 30}});
    flat(bucket, 0).copy_(grad_of(r, 64, 50, 100));
    bucket.entries[1].grad.copy_(randn_seeded(64, 200 + r));
    flat(bucket, 2).copy_(grad_of(r, 30, 30, 300));
    StepContext ctx;
    ctx.seed = 17;
    algo->reduce_gradients(bucket, comm, ctx);
    const int64_t c = static_cast<int64_t>(ctx.stats["dgc.selected"]);
    EXPECT_EQ(ctx.stats["dgc.payload_bytes"], 8 * c);
    EXPECT_EQ(comm.step().payload_bytes, n > 1 ? 8 * c + 8 + 4 * 64 : 0);
    EXPECT_EQ(comm.step().calls, 2);
    std::lock_guard<std::mutex> lock(mu);
    results[r] = bucket.flat.clone();
    selected[r] = c;
    bus[r] = comm.step().bus_bytes;
  });
  int64_t gathered = 0;
  for (int r = 0; r < n; ++r) gathered += 8 * selected[r] + 8;
  auto mean_bias = torch::zeros({64});
  for (int r = 0; r < n; ++r) mean_bias += randn_seeded(64, 200 + r) / n;
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(torch::equal(results[r], results[0])) << "rank " << r;
    EXPECT_EQ(bus[r], allgather_bus_bytes(gathered, n) + allreduce_bus_bytes(4 * 64, n));
    auto w0 = results[0].narrow(0, 0, 3200) * n, w2 = results[0].narrow(0, 3264, 900) * n;
    auto g0 = grad_of(r, 64, 50, 100), g2 = grad_of(r, 30, 30, 300);
    auto own0 = g0.ne(0), own2 = g2.ne(0);
    auto s0 = w0.ne(0) & own0, s2 = w2.ne(0) & own2;
    expect_topk_superset(s0, g0, 32);
    expect_topk_superset(s2, g2, 9);
    EXPECT_EQ(s0.sum().item<int64_t>() + s2.sum().item<int64_t>(), selected[r]);
    EXPECT_TRUE(torch::allclose(w0 * own0, g0 * s0, 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(w2 * own2, g2 * s2, 1e-5, 1e-6));
  }
  EXPECT_TRUE(torch::allclose(results[0].narrow(0, 3200, 64), mean_bias, 1e-6, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Ranks, DgcRanks, ::testing::Values(1, 2, 4));

// Training oracle: a tiny linear model (W 4x5 sparsified with k = 2, b dense) trained 6 steps
// with the algorithm + plain SGD, against DGC written out in plain LibTorch with an exact top-k
// (tensors this small take the exact path).
TEST(Dgc, TrainingOracle) {
  const double lr = 0.1, m = 0.9;
  auto gen = make_generator(3, 0, 0);
  auto x = torch::randn({16, 5}, gen), y = torch::randn({16, 4}, gen);
  auto w0 = torch::randn({4, 5}, gen), b0 = torch::randn({4}, gen);
  auto grads = [&](const torch::Tensor& w, const torch::Tensor& b) {
    auto wv = w.clone().requires_grad_(true), bv = b.clone().requires_grad_(true);
    auto loss = (torch::matmul(x, wv.t()) + bv - y).pow(2).mean();
    loss.backward();
    return std::make_pair(wv.grad().clone(), bv.grad().clone());
  };
  auto algo = make_algorithm("dgc", "{sparsity: 0.9, warmup_epochs: 0, momentum: 0.9}");
  LocalCommunicator comm;
  auto bucket = bucket_of_shapes({{4, 5}, {4}});
  auto wa = w0.clone(), ba = b0.clone(), wr = w0.clone(), br = b0.clone();
  auto u = torch::zeros({20}), v = torch::zeros({20}), ub = torch::zeros({4});
  for (int step = 0; step < 6; ++step) {
    auto [gw, gb] = grads(wa, ba);
    bucket.entries[0].grad.copy_(gw);
    bucket.entries[1].grad.copy_(gb);
    StepContext ctx;
    ctx.step = step;
    ctx.lr = lr;
    algo->reduce_gradients(bucket, comm, ctx);
    EXPECT_EQ(ctx.stats["dgc.selected"], 2);
    wa -= lr * bucket.entries[0].grad;
    ba -= lr * bucket.entries[1].grad;

    auto [rw, rb] = grads(wr, br);
    u = m * u + rw.reshape({-1});
    v = v + u;
    auto idx = std::get<1>(torch::topk(v.abs(), 2));
    auto upd = torch::zeros({20});
    upd.index_put_({idx}, v.index_select(0, idx));
    v.index_fill_(0, idx, 0);
    u.index_fill_(0, idx, 0);
    ub = m * ub + rb;
    wr -= lr * upd.view({4, 5});
    br -= lr * ub;
    EXPECT_TRUE(torch::allclose(wa, wr, 1e-6, 1e-6)) << "step " << step;
    EXPECT_TRUE(torch::allclose(ba, br, 1e-6, 1e-6)) << "step " << step;
  }
  EXPECT_FALSE(torch::allclose(wa, w0));
}

// ResNet-20 (CIFAR, option-A shortcuts: 269,722 parameters) as one bucket on 2 ranks at 99.9%:
// the metered bytes lie between the bounds k ≤ |S| ≤ 1.3k give, against the dense allreduce.
TEST(Dgc, ResNet20PayloadPerStep) {
  const auto shapes = testing::resnet20_shapes();
  int64_t total = 0, dense = 0, lo = 8, hi = 8;
  for (const auto& s : shapes) {
    int64_t n = c10::multiply_integers(s);
    total += n;
    if (s.size() <= 1) {
      dense += n;
    } else {
      int64_t k = static_cast<int64_t>(std::ceil(n * 0.001 - 1e-9));
      lo += 8 * k;
      hi += 8 * static_cast<int64_t>(std::floor(1.3 * k));
    }
  }
  ASSERT_EQ(total, 269722);
  run_ranks(2, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto algo = make_algorithm("dgc", "{warmup_epochs: 0}");
    auto bucket = bucket_of_shapes(shapes);
    bucket.flat.copy_(randn_seeded(total, 40 + comm.rank()));
    StepContext ctx;
    algo->reduce_gradients(bucket, comm, ctx);
    const int64_t bytes = comm.step().payload_bytes;
    EXPECT_GE(bytes, lo + 4 * dense);
    EXPECT_LE(bytes, hi + 4 * dense);
    if (comm.rank() == 0)
      std::cout << "ResNet-20 at 99.9%: " << bytes << " payload bytes per step (sparse "
                << bytes - 4 * dense << ", dense BN/bias " << 4 * dense << ") vs " << 4 * total
                << " dense: " << double(4 * total) / bytes << "x\n";
  });
}

TEST(Dgc, ParamsAndInterface) {
  EXPECT_THROW(make_algorithm("dgc", "{sparsity: 1.0}"), ConfigError);
  EXPECT_THROW(make_algorithm("dgc", "{sparsity: -0.1}"), ConfigError);
  EXPECT_THROW(make_algorithm("dgc", "{lower_bound: 1.0}"), ConfigError);
  EXPECT_THROW(make_algorithm("dgc", "{sample_ratio: 0.0001}"), ConfigError);
  EXPECT_THROW(make_algorithm("dgc", "{density: 0.1}"), ConfigError);
  EXPECT_TRUE(make_algorithm("dgc", "{}")->applies_momentum());
  auto info = dgc_algorithm();
  EXPECT_EQ(info.name, "dgc");
  auto docs = info.params();
  ASSERT_EQ(docs.size(), 12u);
  EXPECT_EQ(docs[0].key, "sparsity");
  EXPECT_EQ(docs[0].default_value, "0.999");
  YAML::Node resolved = testing::resolved_params("dgc", "{sparsity: 0.99}");
  EXPECT_EQ(resolved["sparsity"].as<double>(), 0.99) << resolved;
  EXPECT_EQ(resolved["warmup_epochs"].as<int64_t>(), 4) << resolved;
}

}  // namespace
}  // namespace cedar
