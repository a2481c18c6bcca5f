// The parameter server (runner/ps/*.h) on in-process ranks: bsp equals synchronous SGD
// written here from torch.optim.SGD's rule, with bytes equal to the wire format's formula; ssp's
// clock bound and asp's staleness with a worker the server provably holds back; the shards'
// balance and the clock gate on their own.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "runner/ps/clock_gate.h"
#include "runner/ps/lag_rule.h"
#include "runner/ps/layout.h"
#include "runner/ps/protocol.h"
#include "runner/ps/server.h"
#include "runner/ps/worker.h"

namespace cedar {
namespace {

// Two parameters (4x3 and 3 elements), the same initial values on every rank.
std::vector<torch::Tensor> initial_params() {
  return {torch::linspace(-1, 1, 12).view({4, 3}), torch::tensor({0.5f, -0.25f, 2.0f})};
}

// Worker w's gradient at x: a_w * x - c_w, elementwise, with its own a_w and c_w per step.
std::vector<torch::Tensor> gradient_of(int worker, int64_t step,
                                       const std::vector<torch::Tensor>& x) {
  std::vector<torch::Tensor> g;
  for (size_t i = 0; i < x.size(); ++i) {
    const float a = 0.5f + 0.25f * float(worker) + 0.125f * float(i);
    const float c = 0.1f * float(step + 1) - 0.2f * float(worker);
    g.push_back(x[i] * a - c);
  }
  return g;
}

OptimizerConfig sgd(double momentum) {
  OptimizerConfig o;
  o.momentum = momentum;
  o.weight_decay = 1e-2;
  return o;
}

struct Applied {
  int worker;
  int64_t staleness;
};

struct PsOutcome {
  std::vector<torch::Tensor> server_params;  // after the run (one server)
  std::vector<Applied> applied;
  std::vector<int64_t> payload;  // per rank: metered payload bytes sent
  std::vector<int64_t> steps;    // per worker rank: steps computed
  // Per worker rank, per step: whether it uploaded, and the bytes it sent in the step.
  std::vector<std::vector<std::pair<bool, int64_t>>> sent;
};

// Worker 1's gradient when `constant_worker1`: the same at every step and point.
std::vector<torch::Tensor> worker_gradient(int worker, int64_t step,
                                           const std::vector<torch::Tensor>& x,
                                           bool constant_worker1) {
  if (worker == 1 && constant_worker1) return {torch::full({4, 3}, 0.3f), torch::full({3}, -0.2f)};
  return gradient_of(worker, step, x);
}

// One server (rank 0) and `workers` workers on in-process ranks; with lag_xi >= 0 the workers
// upload by LAG's rule (history 10) at the constant rate lr (with constant_worker1, worker 1
// alone; the others upload every gradient).
PsOutcome run_ps(int workers, PsServerOptions options, double lr, double momentum,
                 double lag_xi = -1, bool constant_worker1 = false) {
  PsOutcome out;
  out.payload.assign(static_cast<size_t>(workers + 1), 0);
  out.steps.assign(static_cast<size_t>(workers + 1), 0);
  out.sent.resize(static_cast<size_t>(workers + 1));
  std::mutex mu;
  run_ranks(workers + 1, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    std::vector<torch::Tensor> params = initial_params();
    std::vector<int64_t> numels;
    for (const auto& p : params) numels.push_back(p.numel());
    const PsLayout layout = make_ps_layout(numels, 1, comm.size());
    if (comm.rank() == 0) {
      std::vector<NamedTensor> named = {{"w", params[0]}, {"b", params[1]}};
      PsServerHooks hooks;
      hooks.on_update = [&](const PsUpdate& u) {
        std::lock_guard<std::mutex> lock(mu);
        for (int w : u.workers) out.applied.push_back({w, u.staleness});
      };
      PsServer server(
          comm, layout, 0, named, sgd(momentum), options, [lr](int64_t) { return lr; }, hooks);
      server.run();
      out.server_params = params;
    } else {
      const int worker = layout.worker_of_rank(comm.rank());
      LagUploadRule lag(std::max(lag_xi, 0.0), 10);
      std::vector<torch::Tensor> previous;
      std::vector<std::pair<bool, int64_t>> sent;
      PsWorkerHooks hooks;
      hooks.compute = [&](int64_t step) {
        PsWorkerStep s;
        s.grads = worker_gradient(worker, step, params, constant_worker1);
        s.count = 1;
        if (lag_xi >= 0 && (!constant_worker1 || worker == 1)) {
          if (!previous.empty()) lag.moved(squared_distance(params, previous), lr);
          previous.clear();
          for (const auto& p : params) previous.push_back(p.clone());
          s.upload = lag.upload(s.grads);
        }
        return s;
      };
      hooks.after_push = [&](const PsWorkerStep& s, int64_t) {
        sent.push_back({s.upload, comm.step().payload_bytes});
      };
      PsWorker ps_worker(comm, layout, params, hooks);
      const int64_t stop = ps_worker.run();
      const int64_t steps = ps_worker.steps();
      EXPECT_EQ(stop, kStopCompleted) << "worker " << worker << ": the run ends at its budget";
      std::lock_guard<std::mutex> lock(mu);
      out.steps[static_cast<size_t>(comm.rank())] = steps;
      out.sent[static_cast<size_t>(comm.rank())] = sent;
    }
    std::lock_guard<std::mutex> lock(mu);
    out.payload[static_cast<size_t>(comm.rank())] =
        comm.totals().count("send") ? comm.totals().at("send").payload_bytes : 0;
  });
  return out;
}

// bsp with one server and two workers takes the steps of synchronous SGD on the average of the
// workers' gradients (torch.optim.SGD: d = g + wd*x; b = m*b + d; x -= lr*b), and the bytes are
// the wire format's: per step a worker sends a 32-byte header and its gradient, the server answers
// each with a 16-byte header and the parameters (the last answer, stop, without them), and each
// worker's goodbye is one more header.
TEST(ParameterServer, BspEqualsSynchronousSgdWithTheFormulaBytes) {
  constexpr int64_t kSteps = 6;
  constexpr double kLr = 0.05, kMomentum = 0.9, kWd = 1e-2;
  PsServerOptions options;
  options.mode = "bsp";
  options.budget = kSteps;
  const PsOutcome got = run_ps(2, options, kLr, kMomentum);

  std::vector<torch::Tensor> x = initial_params();
  std::vector<torch::Tensor> b(x.size());
  for (int64_t step = 0; step < kSteps; ++step) {
    const auto g0 = gradient_of(0, step, x), g1 = gradient_of(1, step, x);
    for (size_t i = 0; i < x.size(); ++i) {
      torch::Tensor d = (g0[i] + g1[i]) / 2 + x[i] * kWd;
      b[i] = step == 0 ? d.clone() : b[i] * kMomentum + d;
      x[i] = x[i] - b[i] * kLr;
    }
  }
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_TRUE(torch::allclose(got.server_params[i], x[i], 1e-6, 1e-7))
        << "parameter " << i << ": max difference "
        << (got.server_params[i] - x[i]).abs().max().item<double>();
  for (const Applied& a : got.applied) EXPECT_EQ(a.staleness, 0);
  EXPECT_EQ(got.applied.size(), size_t{2 * kSteps});

  const int64_t n = 12 + 3;  // elements of the model
  for (int rank = 1; rank <= 2; ++rank) {
    EXPECT_EQ(got.steps[rank], kSteps);
    EXPECT_EQ(got.payload[rank], kSteps * (32 + 4 * n) + 32) << "worker rank " << rank;
  }
  EXPECT_EQ(got.payload[0], 2 * ((kSteps - 1) * (16 + 4 * n) + 16));
}

// ssp with bound s: worker 1's pushes are held until worker 0 cannot go on (it may run at most s
// clocks ahead), so every gradient of worker 1 is applied stale, and none staler than the bound
// implies: between a worker's pull and its push's apply, each other worker applies at most
// 2s + 1 gradients.
TEST(ParameterServer, SspNeverExceedsItsBoundWithAHeldWorker) {
  for (int64_t s : {0, 1, 2}) {
    PsServerOptions options;
    options.mode = "ssp";
    options.staleness = s;
    options.budget = 40;
    options.hold_worker = 1;
    options.hold_updates = 1000;  // held until worker 0 must wait
    const PsOutcome got = run_ps(2, options, 0.01, 0.0);
    ASSERT_EQ(got.applied.size(), size_t{40});
    int64_t held_max = 0, held_min = 1 << 30;
    for (const Applied& a : got.applied) {
      EXPECT_LE(a.staleness, 2 * s + 1) << "s = " << s;
      if (a.worker == 1) {
        held_max = std::max(held_max, a.staleness);
        held_min = std::min(held_min, a.staleness);
      }
    }
    EXPECT_GE(held_min, 1) << "s = " << s << ": worker 1 was held until worker 0 applied more";
    EXPECT_EQ(held_max, s + 1) << "s = " << s << ": worker 0 runs s + 1 gradients ahead";
  }
}

// asp: nobody waits, so the held worker's gradients are applied at least `hold_updates` versions
// stale (the other worker keeps pushing while they are held, and maybe while they are computed);
// its first one, computed on version 0 before anything was applied, exactly that.
TEST(ParameterServer, AspAppliesTheHeldWorkersGradientsStale) {
  PsServerOptions options;
  options.mode = "asp";
  options.budget = 30;
  options.hold_worker = 1;
  options.hold_updates = 3;
  const PsOutcome got = run_ps(2, options, 0.01, 0.0);
  ASSERT_EQ(got.applied.size(), size_t{30});
  int held = 0;
  for (const Applied& a : got.applied) {
    if (a.worker != 1) continue;
    EXPECT_GE(a.staleness, 3);
    if (held++ == 0) {
      EXPECT_EQ(a.staleness, 3) << "the first held gradient";
    }
  }
  EXPECT_GE(held, 1);
}

// LAG on the server: worker 1's gradient never changes, so after its first upload its rule
// always says skip (worker 0 uploads every gradient), and each such step sends nothing at all (an
// empty message, metered as zero bytes), while the server reuses the upload: plain SGD steps on
// the average of worker 0's gradient and worker 1's constant one.
TEST(ParameterServer, LagSkipSendsNoGradientAndTheServerReusesTheLastUpload) {
  constexpr int64_t kSteps = 8;
  constexpr double kLr = 0.05, kWd = 1e-2;
  PsServerOptions options;
  options.mode = "bsp";
  options.budget = kSteps;
  options.momentum = false;
  const PsOutcome got = run_ps(2, options, kLr, 0.9, /*lag_xi=*/1.0, /*constant_worker1=*/true);
  const int64_t n = 15;
  const auto& w1 = got.sent[2];
  ASSERT_EQ(w1.size(), size_t{kSteps});
  EXPECT_TRUE(w1[0].first);
  EXPECT_EQ(w1[0].second, 32 + 4 * n);
  for (size_t k = 1; k < w1.size(); ++k) {
    EXPECT_FALSE(w1[k].first) << "step " << k;
    EXPECT_EQ(w1[k].second, 0) << "step " << k << ": a skipped upload sends no bytes";
  }
  // Total: one upload and the goodbye.
  EXPECT_EQ(got.payload[2], (32 + 4 * n) + 32);

  std::vector<torch::Tensor> x = initial_params();
  for (int64_t step = 0; step < kSteps; ++step) {
    const auto g0 = gradient_of(0, step, x);
    const auto g1 = worker_gradient(1, step, x, true);
    for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] - ((g0[i] + g1[i]) / 2 + x[i] * kWd) * kLr;
  }
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_TRUE(torch::allclose(got.server_params[i], x[i], 1e-6, 1e-7)) << "parameter " << i;
}

// With xi = 0 LAG uploads every gradient that changed at all, and the run is bsp's with plain
// SGD steps, bitwise.
TEST(ParameterServer, LagWithXiZeroIsBspBitwise) {
  PsServerOptions options;
  options.mode = "bsp";
  options.budget = 10;
  options.momentum = false;
  const PsOutcome lag = run_ps(2, options, 0.05, 0.9, /*lag_xi=*/0.0);
  const PsOutcome bsp = run_ps(2, options, 0.05, 0.0);
  for (size_t i = 0; i < bsp.server_params.size(); ++i)
    EXPECT_TRUE(torch::equal(lag.server_params[i], bsp.server_params[i])) << "parameter " << i;
  for (const auto& [uploaded, bytes] : lag.sent[1]) EXPECT_TRUE(uploaded);
  EXPECT_EQ(lag.payload, bsp.payload);
}

// Two servers (one parameter each), asp or ssp: each serves on its own, applies exactly its
// budget of gradients and ends every worker's run at it. Worker w's gradient is the constant
// 0.1 (w + 1) and the steps are plain SGD, so a server's shard ends at x0 - lr / W * sum over its
// applied gradients, whatever order they came in; ssp's bound (s = 1) holds at each server.
TEST(ParameterServer, TwoServersEachApplyTheirBudgetAsynchronously) {
  for (const std::string mode : {"asp", "ssp"}) {
    constexpr int kWorkers = 3, kServers = 2;
    constexpr int64_t kBudget = 45;
    constexpr double kLr = 0.05;
    PsServerOptions options;
    options.mode = mode;
    options.staleness = 1;
    options.budget = kBudget;
    options.momentum = false;
    OptimizerConfig plain;
    plain.momentum = 0;
    plain.weight_decay = 0;
    std::mutex mu;
    std::vector<std::vector<int>> applied(kServers);  // per server: whose gradient, in order
    std::vector<std::vector<int64_t>> staleness(kServers);
    std::vector<std::vector<torch::Tensor>> finals(kServers);
    std::vector<int64_t> stops;
    run_ranks(kServers + kWorkers, [&](Communicator& inner) {
      MeteredCommunicator comm(inner);
      std::vector<torch::Tensor> params = initial_params();
      const PsLayout layout = make_ps_layout({12, 3}, kServers, comm.size());
      if (layout.is_server(comm.rank())) {
        const int server = comm.rank();
        std::vector<NamedTensor> named = {{"w", params[0]}, {"b", params[1]}};
        PsServerHooks hooks;
        hooks.on_update = [&](const PsUpdate& u) {
          std::lock_guard<std::mutex> lock(mu);
          for (int w : u.workers) applied[server].push_back(w);
          staleness[server].push_back(u.staleness);
        };
        PsServer ps(
            comm, layout, server, named, plain, options, [](int64_t) { return kLr; }, hooks);
        ps.run();
        std::lock_guard<std::mutex> lock(mu);
        finals[server] = {params[0].clone(), params[1].clone()};
        return;
      }
      const int worker = layout.worker_of_rank(comm.rank());
      PsWorkerHooks hooks;
      hooks.compute = [&](int64_t) {
        PsWorkerStep s;
        for (const auto& p : params) s.grads.push_back(torch::full_like(p, 0.1f * (worker + 1)));
        s.count = 1;
        return s;
      };
      PsWorker ps_worker(comm, layout, params, hooks);
      const int64_t stop = ps_worker.run();
      std::lock_guard<std::mutex> lock(mu);
      stops.push_back(stop);
    });
    EXPECT_EQ(stops, std::vector<int64_t>(kWorkers, kStopCompleted)) << mode;
    const std::vector<torch::Tensor> x0 = initial_params();
    for (int server = 0; server < kServers; ++server) {
      ASSERT_EQ(applied[server].size(), size_t{kBudget}) << mode << ", server " << server;
      const PsLayout layout = make_ps_layout({12, 3}, kServers, kServers + kWorkers);
      double sum = 0;
      for (int w : applied[server]) sum += 0.1 * (w + 1);
      for (size_t i = 0; i < x0.size(); ++i) {
        if (layout.server_of[i] != server) continue;
        const torch::Tensor expected = x0[i] - kLr / kWorkers * sum;
        EXPECT_TRUE(torch::allclose(finals[server][i], expected, 1e-5, 1e-5))
            << mode << ", server " << server << ": max difference "
            << (finals[server][i] - expected).abs().max().item<double>();
      }
      // Between a worker's pull and its push's apply each other worker applies at most 2s + 1.
      if (mode == "ssp") {
        for (int64_t st : staleness[server])
          EXPECT_LE(st, (kWorkers - 1) * (2 * 1 + 1)) << "server " << server;
      }
    }
  }
}

TEST(ParameterServer, ShardsAreBalancedByBytes) {
  const PsLayout l = make_ps_layout({100, 10, 60, 50, 5}, 2, 5);
  EXPECT_EQ(l.workers, 3);
  // Largest first to the lighter server: 100 -> 0, 60 -> 1, 50 -> 1, 10 -> 0, 5 -> 0.
  EXPECT_EQ(l.server_of, (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_EQ(l.shard_numel, (std::vector<int64_t>{115, 110}));
  EXPECT_THROW(make_ps_layout({1, 2}, 2, 2), std::invalid_argument);
  EXPECT_THROW(make_ps_layout({1}, 2, 4), std::invalid_argument);
  const std::vector<torch::Tensor> t = {torch::full({100}, 1.f), torch::full({10}, 2.f),
                                        torch::full({60}, 3.f), torch::full({50}, 4.f),
                                        torch::full({5}, 5.f)};
  const torch::Tensor flat = flatten_shard(t, l, 1);
  ASSERT_EQ(flat.numel(), 110);
  EXPECT_EQ(flat[0].item<float>(), 3.f);
  EXPECT_EQ(flat[60].item<float>(), 4.f);
  std::vector<torch::Tensor> back = {torch::zeros({100}), torch::zeros({10}), torch::zeros({60}),
                                     torch::zeros({50}), torch::zeros({5})};
  unflatten_shard(flat, back, l, 1);
  EXPECT_TRUE(torch::equal(back[2], t[2]));
  EXPECT_TRUE(torch::equal(back[3], t[3]));
  EXPECT_EQ(back[0].abs().sum().item<float>(), 0.f);
}

TEST(ParameterServer, ClockGateLetsAWorkerRunAtMostSClocksAhead) {
  ClockGate gate(2, 1);
  EXPECT_TRUE(gate.may_start(0));
  gate.applied(0);  // clocks 1, 0
  EXPECT_TRUE(gate.may_start(0));
  gate.applied(0);  // 2, 0
  EXPECT_FALSE(gate.may_start(0));
  EXPECT_TRUE(gate.may_start(1));
  gate.applied(1);  // 2, 1
  EXPECT_TRUE(gate.may_start(0));
  gate.applied(0);  // 3, 1
  EXPECT_FALSE(gate.may_start(0));
  gate.leave(1);  // the slow worker left: nothing holds worker 0 back
  EXPECT_TRUE(gate.may_start(0));
  ClockGate none(2, -1);
  for (int i = 0; i < 10; ++i) none.applied(0);
  EXPECT_TRUE(none.may_start(0));
}

}  // namespace
}  // namespace cedar

namespace cedar {
namespace {

// A checkpoint taken in process: the server's state and each worker's resume point.
struct PsSnapshot {
  TensorMap server;
  std::vector<PsWorkerResume> workers;  // by worker
  std::vector<torch::Tensor> worker_params;
};

struct ResumableRun {
  std::vector<torch::Tensor> server_params;
  int64_t stop = 0;           // the server's stop code
  int64_t updates_after = 0;  // updates applied by this run (after the resume, if resumed)
  std::vector<int64_t> staleness;
};

// One server and two workers (gradient_of), a checkpoint due at version `checkpoint_at` captured
// into `capture`; or, with `resume`, a run that continues from such a snapshot.
ResumableRun run_resumable(const PsServerOptions& options, int64_t checkpoint_at,
                           PsSnapshot* capture, const PsSnapshot* resume) {
  constexpr double kLr = 0.05;
  ResumableRun out;
  std::mutex mu;
  if (capture) capture->workers.resize(2);
  run_ranks(3, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    std::vector<torch::Tensor> params = initial_params();
    const PsLayout layout = make_ps_layout({12, 3}, 1, comm.size());
    if (comm.rank() == 0) {
      std::vector<NamedTensor> named = {{"w", params[0]}, {"b", params[1]}};
      PsServer* self = nullptr;
      PsServerHooks hooks;
      hooks.on_update = [&](const PsUpdate& u) {
        std::lock_guard<std::mutex> lock(mu);
        ++out.updates_after;
        out.staleness.push_back(u.staleness);
      };
      hooks.checkpoint_due = [&](int64_t v) { return capture && v == checkpoint_at; };
      hooks.on_checkpoint = [&](int64_t) {
        std::lock_guard<std::mutex> lock(mu);
        self->save(capture->server);
      };
      PsServer server(
          comm, layout, 0, named, sgd(0.9), options, [](int64_t) { return kLr; }, hooks);
      self = &server;
      if (resume) server.restore(resume->server);
      server.run(resume != nullptr);
      out.server_params = params;
      out.stop = server.stop_code();
      return;
    }
    const int worker = layout.worker_of_rank(comm.rank());
    if (resume) params = {resume->worker_params[0].clone(), resume->worker_params[1].clone()};
    PsWorkerHooks hooks;
    hooks.compute = [&](int64_t step) {
      PsWorkerStep s;
      s.grads = gradient_of(worker, step, params);
      s.count = 1;
      return s;
    };
    hooks.checkpoint = [&](int64_t version, int64_t steps, int64_t code) {
      std::lock_guard<std::mutex> lock(mu);
      capture->workers[static_cast<size_t>(worker)] = {steps, version, code};
    };
    PsWorker ps_worker(comm, layout, params, hooks);
    ps_worker.run(resume ? &resume->workers[static_cast<size_t>(worker)] : nullptr);
  });
  return out;
}

// bsp resumes bitwise: a run continued from the checkpoint of round 3 ends with the parameters of
// the run that was not stopped, and applies exactly the rounds after it.
TEST(ParameterServerResume, BspContinuesFromItsCheckpointBitwise) {
  PsServerOptions options;
  options.mode = "bsp";
  options.budget = 8;
  PsSnapshot snapshot;
  const ResumableRun whole = run_resumable(options, 3, &snapshot, nullptr);
  ASSERT_FALSE(snapshot.server.empty()) << "no checkpoint was written";
  EXPECT_EQ(snapshot.server.at("ps.server.numbers")[0].item<int64_t>(), 3);
  for (const PsWorkerResume& w : snapshot.workers) {
    EXPECT_EQ(w.steps, 3) << "each worker has pushed the 3 rounds and waits";
    EXPECT_EQ(w.code, kCheckpoint) << "the body of its reply follows the checkpoint";
  }
  // The workers hold whatever they held; the server's first answer overwrites it.
  snapshot.worker_params = {torch::zeros({4, 3}), torch::zeros({3})};
  const ResumableRun resumed = run_resumable(options, -1, nullptr, &snapshot);
  EXPECT_EQ(resumed.updates_after, 8 - 3);
  EXPECT_EQ(resumed.stop, kStopCompleted);
  for (size_t i = 0; i < whole.server_params.size(); ++i)
    EXPECT_TRUE(torch::equal(resumed.server_params[i], whole.server_params[i]))
        << "parameter " << i;
}

// asp resumes from the server's snapshot: the run applies the rest of its budget and ends; its
// numbers need not be the uninterrupted run's (arrival order), but a snapshot is only taken once
// every worker waits, so no gradient is lost or applied twice.
TEST(ParameterServerResume, AspContinuesFromTheServersSnapshot) {
  PsServerOptions options;
  options.mode = "asp";
  options.budget = 12;
  PsSnapshot snapshot;
  run_resumable(options, 5, &snapshot, nullptr);
  ASSERT_FALSE(snapshot.server.empty()) << "no checkpoint was written";
  const int64_t version = snapshot.server.at("ps.server.numbers")[0].item<int64_t>();
  const at::Tensor applied = snapshot.server.at("ps.server.applied");
  EXPECT_GE(version, 5);
  EXPECT_EQ(applied.sum().item<int64_t>(), version) << "every applied gradient is counted once";
  for (size_t w = 0; w < 2; ++w)
    EXPECT_EQ(snapshot.workers[w].steps, applied[static_cast<int64_t>(w)].item<int64_t>())
        << "worker " << w << ": each push it made is in the snapshot";
  snapshot.worker_params = {torch::zeros({4, 3}), torch::zeros({3})};
  const ResumableRun resumed = run_resumable(options, -1, nullptr, &snapshot);
  EXPECT_EQ(resumed.updates_after, 12 - version);
  EXPECT_EQ(resumed.stop, kStopCompleted);
}

// A learning rate that makes the parameters overflow: the server stops the run with
// kStopDiverged, naming the tensor, and every worker is told.
TEST(ParameterServerResume, NonFiniteParametersStopTheRunAsDiverged) {
  std::atomic<int> workers_told{0};
  std::string reason;
  run_ranks(3, [&](Communicator& inner) {
    MeteredCommunicator comm(inner);
    std::vector<torch::Tensor> params = initial_params();
    const PsLayout layout = make_ps_layout({12, 3}, 1, comm.size());
    PsServerOptions options;
    options.budget = 50;
    if (comm.rank() == 0) {
      std::vector<NamedTensor> named = {{"w", params[0]}, {"b", params[1]}};
      PsServer server(comm, layout, 0, named, sgd(0), options, [](int64_t) { return 1e30; }, {});
      server.run();
      EXPECT_EQ(server.stop_code(), kStopDiverged);
      reason = server.stop_reason();
      return;
    }
    PsWorkerHooks hooks;
    hooks.compute = [&](int64_t step) {
      PsWorkerStep s;
      s.grads = gradient_of(layout.worker_of_rank(comm.rank()), step, params);
      return s;
    };
    if (PsWorker(comm, layout, params, hooks).run() == kStopDiverged) ++workers_told;
  });
  EXPECT_EQ(workers_told.load(), 2);
  EXPECT_NE(reason.find("are not finite"), std::string::npos) << reason;
}

}  // namespace
}  // namespace cedar
