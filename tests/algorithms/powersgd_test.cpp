// PowerSGD (Vogels et al. 2019): orthonormal P, the error-feedback invariant, exact reconstruction
// at full rank, exact byte counts, bit-identical aggregates on 2 and 4 ranks, a 3-step oracle
// against a plain-LibTorch reference written here, and same-shape batching (P laid out as one
// batch per shape, results as without it).
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "algorithms/algorithm.h"
#include "algorithms/catalog.h"
#include "algorithms/codecs/compressor.h"
#include "comm/communicator.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "models/model.h"
#include "runner/train/buckets.h"
#include "tests/unit/algorithm_harness.h"

namespace cedar {
void powersgd_orthonormalize(at::Tensor p, double epsilon);

namespace {

using Shapes = testing::NamedShapes;
using testing::bucket_of_named_shapes;
using testing::make_algorithm;

// Gradient of `rank` at `step` for every entry (deterministic, different per rank).
std::vector<at::Tensor> grads_for(const Shapes& shapes, int rank, int64_t step) {
  at::Generator gen = make_generator(7, rank, step, 99);
  std::vector<at::Tensor> out;
  for (const auto& s : shapes) out.push_back(at::randn(s.second, gen));
  return out;
}

void fill(GradBucket& b, const std::vector<at::Tensor>& g) {
  for (size_t i = 0; i < g.size(); ++i) b.entries[i].grad.copy_(g[i]);
}

const Shapes kShapes = {{"conv.weight", {16, 8, 3, 3}},  // 16 x 72: compressed
                        {"conv.bias", {16}},             // vector: plain
                        {"fc.weight", {10, 16}},         // 10 x 16: compressed at rank 2
                        {"tiny.weight", {3, 4}}};        // (3+4)*2*2 >= 12: plain

TEST(PowerSgd, GramSchmidtGivesOrthonormalColumns) {
  for (int64_t r : {1, 2, 4, 7}) {
    at::Generator gen = make_generator(1, 0, r);
    auto p = at::randn({50, r}, gen);
    auto span_before = p.clone();
    powersgd_orthonormalize(p, 0);
    EXPECT_TRUE(torch::allclose(p.t().mm(p), torch::eye(r), 0, 1e-5)) << "rank " << r;
    // Same column span: projecting the original columns onto P leaves them unchanged.
    EXPECT_TRUE(torch::allclose(p.mm(p.t().mm(span_before)), span_before, 1e-4, 1e-4));
  }
  auto z = torch::zeros({5, 2});  // all-zero columns stay zero (no NaN)
  powersgd_orthonormalize(z, 0);
  EXPECT_TRUE(torch::equal(z, torch::zeros({5, 2})));
}

TEST(PowerSgd, ErrorFeedbackKeepsLocalMEqualToApproximationPlusError) {
  // Per rank: e_t = (g_t + e_{t-1}) - out_t, so e_T = sum_t g_t - sum_t out_t. The algorithm logs
  // ||e_T||^2, which must equal that of the telescoped sum for the LOCAL gradients.
  run_ranks(2, [](Communicator& comm) {
    auto alg = make_algorithm("powersgd", "{rank: 1}");
    auto b = bucket_of_named_shapes(kShapes);
    at::Tensor sum_g = torch::zeros({16, 72}), sum_out = torch::zeros({16, 72});
    at::Tensor sum_g2 = torch::zeros({10, 16}), sum_out2 = torch::zeros({10, 16});
    for (int64_t step = 0; step < 4; ++step) {
      auto g = grads_for(kShapes, comm.rank(), step);
      fill(b, g);
      StepContext ctx;
      ctx.step = step;
      alg->reduce_gradients(b, comm, ctx);
      sum_g += g[0].view({16, 72});
      sum_out += b.entries[0].grad.view({16, 72});
      sum_g2 += g[2];
      sum_out2 += b.entries[2].grad;
      double expect = (sum_g - sum_out).to(torch::kDouble).square().sum().item<double>() +
                      (sum_g2 - sum_out2).to(torch::kDouble).square().sum().item<double>();
      EXPECT_NEAR(ctx.stats.at("powersgd_error_sq"), expect, 1e-4 * expect) << "step " << step;
      EXPECT_GT(expect, 1.0);  // rank 1 of random matrices: a real error to carry
    }
  });
}

TEST(PowerSgd, OutputIsAnOrthogonalProjectionOfM) {
  // One rank: out = P P^T M with orthonormal P, so (M - out) is orthogonal to out.
  LocalCommunicator comm;
  auto alg = make_algorithm("powersgd", "{rank: 2, error_feedback: false}");
  auto b = bucket_of_named_shapes({{"w", {20, 30}}});
  auto m = grads_for({{"w", {20, 30}}}, 0, 0)[0];
  fill(b, {m});
  StepContext ctx;
  alg->reduce_gradients(b, comm, ctx);
  auto out = b.entries[0].grad;
  double inner = ((m - out) * out).sum().item<double>();
  EXPECT_NEAR(inner, 0.0, 1e-3 * out.square().sum().item<double>());
  EXPECT_LT(out.square().sum().item<double>(), m.square().sum().item<double>());
}

TEST(PowerSgd, FullRankReconstructsTheAverageGradient) {
  for (int n : {1, 2}) {
    run_ranks(n, [n](Communicator& comm) {
      auto alg = make_algorithm("powersgd", "{rank: 4, min_compression_rate: 0}");
      Shapes shapes = {{"w", {4, 6}}, {"k", {6, 2, 2, 1}}};
      auto b = bucket_of_named_shapes(shapes);
      for (int64_t step = 0; step < 2; ++step) {
        fill(b, grads_for(shapes, comm.rank(), step));
        StepContext ctx;
        ctx.step = step;
        alg->reduce_gradients(b, comm, ctx);
        for (size_t i = 0; i < shapes.size(); ++i) {
          at::Tensor mean = torch::zeros(shapes[i].second);
          for (int r = 0; r < n; ++r) mean += grads_for(shapes, r, step)[i];
          mean /= n;
          EXPECT_TRUE(torch::allclose(b.entries[i].grad, mean, 1e-4, 1e-5)) << shapes[i].first;
        }
        // One rank: nothing is left over. Several: e = local M - mean, which sums to zero.
        if (n == 1) {
          EXPECT_NEAR(ctx.stats.at("powersgd_error_sq"), 0.0, 1e-8);
        }
      }
    });
  }
}

TEST(PowerSgd, PayloadBytesEqualTheFormulaInThreeAllreduces) {
  run_ranks(2, [](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto alg = make_algorithm("powersgd", "{rank: 2, start_powersgd_iter: 1}");
    auto b = bucket_of_named_shapes(kShapes);
    const int64_t dense = 4 * (16 * 72 + 16 + 10 * 16 + 12);
    const int64_t compressed = 4 * ((16 + 72) * 2 + (10 + 16) * 2) + 4 * (16 + 12);
    for (int64_t step = 0; step < 3; ++step) {
      fill(b, grads_for(kShapes, comm.rank(), step));
      StepContext ctx;
      ctx.step = step;
      comm.reset_step();
      alg->reduce_gradients(b, comm, ctx);
      EXPECT_EQ(comm.step().payload_bytes, step == 0 ? dense : compressed) << "step " << step;
      EXPECT_EQ(comm.step().calls, step == 0 ? 1 : 3);  // warm-up; then plain, P, Q
    }
  });
}

TEST(PowerSgd, RanksAgreeBitForBit) {
  for (int n : {2, 4}) {
    std::vector<std::vector<at::Tensor>> out(n);
    std::mutex mu;
    run_ranks(n, [&](Communicator& comm) {
      auto alg = make_algorithm("powersgd", "{rank: 2}");
      auto b = bucket_of_named_shapes(kShapes);
      std::vector<at::Tensor> mine;
      for (int64_t step = 0; step < 3; ++step) {
        fill(b, grads_for(kShapes, comm.rank(), step));
        StepContext ctx;
        ctx.step = step;
        alg->reduce_gradients(b, comm, ctx);
        mine.push_back(b.flat.clone());
      }
      std::lock_guard<std::mutex> lock(mu);
      out[comm.rank()] = mine;
    });
    for (int r = 1; r < n; ++r)
      for (int s = 0; s < 3; ++s) EXPECT_TRUE(torch::equal(out[r][s], out[0][s])) << n << " " << r;
  }
}

// ---- Oracle: the algorithm written directly in LibTorch (double precision, QR instead of
// Gram-Schmidt), over all ranks at once.
at::Tensor orthonormal_reference(const at::Tensor& p) {
  auto [q, r] = at::linalg_qr(p);
  return q * r.diagonal().sign();  // the positive-diagonal QR factor = Gram-Schmidt's result
}

TEST(PowerSgd, MatchesPlainReferenceForThreeSteps) {
  const int n = 2;
  const uint64_t seed = 5;
  const Shapes shapes = kShapes;
  const std::vector<int64_t> rank_of = {2, 0, 2, 0};  // 0: not compressed
  // Reference state.
  std::vector<at::Tensor> q(shapes.size());
  std::vector<std::vector<at::Tensor>> err(n, std::vector<at::Tensor>(shapes.size()));
  std::vector<std::vector<at::Tensor>> expected;  // [step][entry]
  for (int64_t step = 0; step < 3; ++step) {
    std::vector<at::Tensor> outs;
    if (step == 0) {  // Q0 exactly as the algorithm draws it (identical on every rank)
      at::Generator gen = make_generator(seed, 0, 0, 0x50535344ULL + 3);
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (!rank_of[i]) continue;
        int64_t m = c10::multiply_integers(shapes[i].second) / shapes[i].second[0];
        q[i] = orthonormal_reference(at::randn({m, rank_of[i]}, gen).to(torch::kDouble));
      }
    }
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::vector<at::Tensor> ms;
      for (int r = 0; r < n; ++r) {
        at::Tensor g = grads_for(shapes, r, step)[i].to(torch::kDouble);
        ms.push_back(g.reshape({shapes[i].second[0], -1}));
      }
      if (!rank_of[i]) {
        outs.push_back(((ms[0] + ms[1]) / n).reshape(shapes[i].second));
        continue;
      }
      for (int r = 0; r < n; ++r)
        if (err[r][i].defined()) ms[r] = ms[r] + err[r][i];
      at::Tensor p = (ms[0].mm(q[i]) + ms[1].mm(q[i])) / n;
      p = orthonormal_reference(p);
      q[i] = (ms[0].t().mm(p) + ms[1].t().mm(p)) / n;
      at::Tensor approx = p.mm(q[i].t());
      for (int r = 0; r < n; ++r) err[r][i] = ms[r] - approx;
      outs.push_back(approx.reshape(shapes[i].second));
    }
    expected.push_back(outs);
  }

  run_ranks(n, [&](Communicator& comm) {
    auto alg = make_algorithm("powersgd", "{rank: 2}");
    auto b = bucket_of_named_shapes(shapes, /*index=*/3);
    for (int64_t step = 0; step < 3; ++step) {
      fill(b, grads_for(shapes, comm.rank(), step));
      StepContext ctx;
      ctx.step = step;
      ctx.seed = seed;
      alg->reduce_gradients(b, comm, ctx);
      for (size_t i = 0; i < shapes.size(); ++i)
        EXPECT_TRUE(
            torch::allclose(b.entries[i].grad.to(torch::kDouble), expected[step][i], 1e-4, 1e-5))
            << "step " << step << " " << shapes[i].first << " max diff "
            << (b.entries[i].grad.to(torch::kDouble) - expected[step][i])
                   .abs()
                   .max()
                   .item<double>();
    }
  });
}

TEST(PowerSgd, ResNet20Rank2BytesPerStep) {
  // CIFAR ResNet-20 in 25 MiB buckets on 2 ranks: metered payload = the formula, and the ratio to a
  // dense allreduce is printed.
  auto model = make_model(ModelSpec{"resnet20"});
  std::vector<NamedTensor> params;
  for (auto& p : model->named_parameters()) params.push_back({p.key(), p.value()});
  int64_t dense = 0, formula = 0;
  for (auto& p : params) {
    const auto& t = p.tensor;
    dense += 4 * t.numel();
    if (t.dim() < 2) {
      formula += 4 * t.numel();
      continue;
    }
    int64_t rows = t.size(0), cols = t.numel() / rows, r = std::min<int64_t>({rows, cols, 2});
    formula += (rows + cols) * r * 2 < rows * cols ? 4 * (rows + cols) * r : 4 * t.numel();
  }
  EXPECT_EQ(dense, 4 * 269722);
  run_ranks(2, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    auto buckets = make_buckets(params, 25 * 1024 * 1024);
    auto alg = make_algorithm("powersgd", "{rank: 2}");
    StepContext ctx;
    for (auto& b : buckets) {
      b.flat.normal_();
      alg->reduce_gradients(b, comm, ctx);
    }
    EXPECT_EQ(comm.step().payload_bytes, formula);
    if (comm.rank() == 0)
      std::printf("[ resnet20 ] powersgd rank 2: %lld bytes/step vs dense %lld (%.1fx less)\n",
                  static_cast<long long>(formula), static_cast<long long>(dense),
                  double(dense) / double(formula));
  });
}

// ---- Same-shape batching (batch_same_shape, PyTorch's batch_tensors_with_same_shape).

TEST(PowerSgd, BatchedGramSchmidtOrthonormalisesEachMatrixAsAlone) {
  at::Generator gen = make_generator(3, 0, 0);
  for (int64_t r : {1, 2, 3}) {
    at::Tensor batch = at::randn({4, 30, r}, gen);
    batch.select(0, 2).zero_();  // an all-zero matrix stays zero
    at::Tensor alone = batch.clone();
    powersgd_orthonormalize(batch, 0);
    for (int64_t k = 0; k < 4; ++k) {
      at::Tensor one = alone.select(0, k).clone();
      powersgd_orthonormalize(one, 0);
      EXPECT_TRUE(torch::allclose(batch.select(0, k), one, 1e-5, 1e-6)) << r << " " << k;
      if (k != 2) {
        EXPECT_TRUE(
            torch::allclose(batch.select(0, k).t().mm(batch.select(0, k)), torch::eye(r), 0, 1e-5));
      }
    }
    EXPECT_TRUE(torch::equal(batch.select(0, 2), torch::zeros({30, r})));
  }
}

// Passes every operation to `inner`; keeps a copy of what each allreduce_sum was given.
class AllreduceRecorder final : public Communicator {
 public:
  explicit AllreduceRecorder(Communicator& inner) : inner_(inner) {}
  std::vector<at::Tensor> inputs;

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  void allreduce_sum(at::Tensor& t) override {
    inputs.push_back(t.clone());
    inner_.allreduce_sum(t);
  }
  at::Tensor allgather(const at::Tensor& t) override { return inner_.allgather(t); }
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override { return inner_.allgatherv(t); }
  void broadcast(at::Tensor& t, int root) override { inner_.broadcast(t, root); }
  void barrier() override { inner_.barrier(); }
  void send(const at::Tensor& t, int peer, int tag) override { inner_.send(t, peer, tag); }
  void recv(at::Tensor& t, int peer, int tag) override { inner_.recv(t, peer, tag); }
  int recv_any(at::Tensor& t, int tag) override { return inner_.recv_any(t, tag); }
  void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int tag) override {
    inner_.sendrecv(out, dest, in, source, tag);
  }
  std::unique_ptr<Communicator> split(int color, int key, const std::string& level) override {
    return inner_.split(color, key, level);
  }

 private:
  Communicator& inner_;
};

// Two 8 x 36 matrices of one shape with a 16 x 8 matrix and a vector between them.
const Shapes kRepeatedShapes = {
    {"a.weight", {8, 4, 3, 3}}, {"a.bias", {8}}, {"b.weight", {16, 8}}, {"c.weight", {8, 4, 3, 3}}};

TEST(PowerSgd, BatchingSendsEachShapesPsAsOneBlock) {
  // One rank, step 0: the P allreduce (the second; the first carries the vector) holds M_i Q_i,
  // Q_i drawn as the algorithm documents. Batched, the two 8 x 36 matrices' P's are adjacent.
  const uint64_t seed = 11;
  const int64_t index = 2;
  std::vector<at::Tensor> g = grads_for(kRepeatedShapes, 0, 0);
  at::Generator gen = make_generator(seed, 0, 0, 0x50535344ULL + index);
  std::vector<at::Tensor> p_of;  // a, b, c: M Q with Q orthonormalised
  for (size_t i : {0, 2, 3}) {
    const int64_t n = kRepeatedShapes[i].second[0], m = g[i].numel() / n;
    at::Tensor q = at::randn({m, 2}, gen);
    powersgd_orthonormalize(q, 0);
    p_of.push_back(g[i].reshape({n, m}).mm(q).reshape({-1}));
  }
  for (bool batched : {false, true}) {
    LocalCommunicator local;
    AllreduceRecorder comm(local);
    auto alg = make_algorithm(
        "powersgd", std::string("{rank: 2, batch_same_shape: ") + (batched ? "true}" : "false}"));
    auto b = bucket_of_named_shapes(kRepeatedShapes, index);
    fill(b, g);
    StepContext ctx;
    ctx.seed = seed;
    alg->reduce_gradients(b, comm, ctx);
    ASSERT_EQ(comm.inputs.size(), 3u);  // the vector, P, Q
    at::Tensor expected = batched ? at::cat({p_of[0], p_of[2], p_of[1]}) : at::cat(p_of);
    EXPECT_TRUE(torch::allclose(comm.inputs[1], expected, 1e-5, 1e-5))
        << (batched ? "batched" : "unbatched") << " max diff "
        << (comm.inputs[1] - expected).abs().max().item<double>();
  }
}

TEST(PowerSgd, BatchingAgreesWithUnbatchedOverSteps) {
  // 2 ranks, 4 steps with error feedback and warm start: the same aggregates and logged error to
  // rounding, the same bytes, and ranks agreeing bit for bit.
  std::map<bool, std::vector<std::vector<at::Tensor>>> out;  // [batched][rank][step]
  std::map<bool, std::vector<double>> error_sq;              // rank 0, per step
  std::map<bool, int64_t> bytes;
  std::mutex mu;
  for (bool batched : {false, true}) {
    out[batched].resize(2);
    run_ranks(2, [&](Communicator& inner) {
      MeteredCommunicator comm(inner);
      auto alg = make_algorithm(
          "powersgd", std::string("{rank: 2, batch_same_shape: ") + (batched ? "true}" : "false}"));
      auto b = bucket_of_named_shapes(kRepeatedShapes);
      std::vector<at::Tensor> mine;
      std::vector<double> errs;
      for (int64_t step = 0; step < 4; ++step) {
        fill(b, grads_for(kRepeatedShapes, comm.rank(), step));
        StepContext ctx;
        ctx.step = step;
        alg->reduce_gradients(b, comm, ctx);
        mine.push_back(b.flat.clone());
        errs.push_back(ctx.stats.at("powersgd_error_sq"));
      }
      std::lock_guard<std::mutex> lock(mu);
      out[batched][comm.rank()] = mine;
      if (comm.rank() == 0) {
        error_sq[batched] = errs;
        bytes[batched] = comm.step().payload_bytes;  // over the 4 steps (never reset)
      }
    });
  }
  EXPECT_EQ(bytes[true], bytes[false]);
  for (int64_t step = 0; step < 4; ++step) {
    EXPECT_TRUE(torch::equal(out[true][1][step], out[true][0][step])) << step;
    EXPECT_TRUE(torch::allclose(out[true][0][step], out[false][0][step], 1e-4, 1e-5))
        << "step " << step << " max diff "
        << (out[true][0][step] - out[false][0][step]).abs().max().item<double>();
    EXPECT_NEAR(error_sq[true][step], error_sq[false][step], 1e-4 * error_sq[false][step]);
  }
}

}  // namespace
}  // namespace cedar
