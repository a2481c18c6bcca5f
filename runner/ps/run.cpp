#include "runner/ps/run.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "runner/ps/checkpoint.h"
#include "runner/ps/lag_rule.h"
#include "runner/ps/layout.h"
#include "runner/ps/protocol.h"
#include "runner/ps/recorder.h"
#include "runner/ps/server.h"
#include "runner/ps/shard_relay.h"
#include "runner/ps/worker.h"
#include "runner/ps/worker_buffers.h"
#include "runner/train/checkpoint_state.h"
#include "runner/train/evaluator.h"
#include "runner/train/hold_for_signal.h"
#include "runner/train/log.h"
#include "runner/train/lr_schedule.h"
#include "runner/train/trainer.h"

namespace cedar {
namespace {

std::vector<int64_t> parameter_numels(Model& model) {
  std::vector<int64_t> n;
  for (const auto& p : model.parameters()) n.push_back(p.numel());
  return n;
}

// CEDAR_PS_HOLD_WORKER=<worker>:<updates> (tests): PsServerOptions::hold_worker.
void read_hold(PsServerOptions& o) {
  const char* v = std::getenv("CEDAR_PS_HOLD_WORKER");
  if (!v || !*v) return;
  const std::string s(v);
  const auto colon = s.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument(s);
    o.hold_worker = std::stoi(s.substr(0, colon));
    o.hold_updates = std::stoll(s.substr(colon + 1));
  } catch (const std::exception&) {
    throw ConfigError("CEDAR_PS_HOLD_WORKER='" + s + "': expected <worker>:<updates>");
  }
}

// The run's end as every rank reports it: Diverged or Interrupted for those stop codes.
void raise_stop(int64_t code, const std::string& reason) {
  if (code == kStopDiverged)
    throw Diverged(reason.empty() ? "a parameter server stopped the run: its parameters or the "
                                    "evaluated model are not finite"
                                  : reason);
  if (code == kStopInterrupted)
    throw Interrupted(reason.empty() ? "a parameter server stopped the run: interrupted by a signal"
                                     : reason);
}

RunSummary serve(const PsRunInputs& in, const PsLayout& layout, PsServerOptions options,
                 std::function<double(int64_t)> lr_at, const PsCheckpointPlan& plan,
                 int64_t updates_per_epoch) {
  const int server = in.comm.rank();
  std::vector<NamedTensor> params;
  std::vector<at::Tensor> tensors;
  for (const auto& p : in.model->named_parameters()) {
    params.push_back({p.key(), p.value()});
    tensors.push_back(p.value().detach());
  }
  const int64_t budget = options.budget;
  std::unique_ptr<PsRecorder> recorder;
  if (server == 0) recorder = std::make_unique<PsRecorder>(in, layout, updates_per_epoch);
  PsServer* self = nullptr;
  PsServerHooks hooks;
  if (recorder) hooks.on_push = [&](int worker) { recorder->receive_stats(worker); };
  ShardRelay relay(in.control, layout, server, tensors);
  hooks.on_update = [&](const PsUpdate& u) {
    std::string why;
    const bool finite = !recorder || recorder->losses_finite(u, why);
    if (!finite) self->diverge(why);
    if (finite && recorder) recorder->record(u);
    // Evaluated at the same versions of every server: their shards meet at rank 0.
    if (u.version % updates_per_epoch != 0 && u.version != budget) return;
    if (!recorder) {
      relay.post_shard(u.version);
      return;
    }
    if (!finite) return;
    int64_t code = 0;
    int who = 0;
    if (!relay.gather(u.version, code, who)) {
      if (code == kStopCompleted)
        throw CommError("ps: server " + std::to_string(who) +
                        " ended before rank 0's evaluation of update " + std::to_string(u.version));
      self->stop_as(code, "");
      return;
    }
    const double loss = recorder->evaluate_now(u.version);
    if (!std::isfinite(loss))
      self->diverge("update " + std::to_string(u.version) +
                    ": the test loss of the server-held model is " + std::to_string(loss));
  };
  hooks.on_answered = [&](int64_t version) {
    // Tests: this server has provably applied `version` updates (their rows handed to the store)
    // and answered them.
    if (hold_requested_after(version, server)) {
      if (in.store) in.store->flush();
      hold_for_signal(server);
    }
  };
  if (plan.enabled()) {
    hooks.checkpoint_due = [&plan](int64_t version) { return plan.due(version); };
    hooks.on_checkpoint = [&](int64_t version) {
      TensorMap state;
      self->save(state);
      if (recorder) recorder->save(state);
      save_cpu_rng(state);
      save_comm_totals(state, in.comm);
      if (in.store) in.store->flush();  // rows up to this update are committed first
      plan.write(version, state, in.control);
    };
  }
  // A completed server still posts its last shard (on_update follows); its end comes at finish.
  hooks.on_stop = [&](int64_t code) {
    if (code != kStopCompleted) relay.post_end(self->version(), code);
  };
  PsServer ps(in.comm, layout, server, params, in.cfg.optimizer, std::move(options),
              std::move(lr_at), std::move(hooks));
  self = &ps;
  const bool resumed = in.resume_step >= 0;
  if (resumed) {
    torch::NoGradGuard no_grad;
    const TensorMap state = plan.dir->read(in.resume_step);
    ps.restore(state);
    if (recorder) recorder->restore(state);
    restore_cpu_rng(state);
    restore_comm_totals(state, in.comm);
  }
  ps.run(resumed);
  relay.finish(ps.version(), ps.stop_code());
  raise_stop(ps.stop_code(), ps.stop_reason());
  return recorder ? recorder->summary() : RunSummary{};
}

// bsp: step k's update is the one that makes version k + 1, with lr_at(k).
void work(const PsRunInputs& in, const PsLayout& layout, ShardedLoader& loader,
          const std::function<double(int64_t)>& lr_at, const PsCheckpointPlan& plan) {
  std::vector<at::Tensor> params;
  for (const auto& p : in.model->parameters()) params.push_back(p.detach());
  std::unique_ptr<LagUploadRule> lag;
  std::vector<at::Tensor> previous;  // LAG: the parameters of the previous step
  if (in.ps.upload == "lag") lag = std::make_unique<LagUploadRule>(in.ps.xi, in.ps.history);
  in.model->train();
  int64_t epoch = 0;
  Batch batch;
  double compute_seconds = 0;
  PsWorkerHooks hooks;
  hooks.compute = [&](int64_t step) {
    // Tests: `step` steps of this worker are complete (pushed and answered).
    if (hold_requested_after(step, in.comm.rank())) hold_for_signal(in.comm.rank());
    const double t0 = monotonic_seconds();
    while (!loader.next(batch)) loader.start_epoch(++epoch);
    auto x = batch.images.to(in.device);
    auto y = batch.labels.to(in.device);
    in.model->zero_grad();
    auto out = in.model->forward(x);
    auto loss = torch::nn::functional::cross_entropy(out, y);
    loss.backward();
    PsWorkerStep s;
    for (const auto& p : in.model->parameters())
      s.grads.push_back(p.grad().defined() ? p.grad() : torch::zeros_like(p));
    s.loss_sum = loss.item<double>() * double(y.size(0));
    s.correct = out.argmax(1).eq(y).sum().item<double>();
    s.count = double(y.size(0));
    if (lag) {
      if (!previous.empty()) lag->moved(squared_distance(params, previous), lr_at(step - 1));
      previous.clear();
      for (const auto& p : params) previous.push_back(p.clone());
      s.upload = lag->upload(s.grads);
    }
    compute_seconds = monotonic_seconds() - t0;
    return s;
  };
  hooks.after_push = [&](const PsWorkerStep& s, int64_t) {
    const CommCounters& c = in.comm.step();
    const at::Tensor t = at::tensor(
        {s.loss_sum, s.correct, s.count, compute_seconds, c.seconds, double(c.payload_bytes),
         double(c.bus_bytes), double(c.latency_steps), double(epoch)},
        at::kDouble);
    // The buffers this step's forward pass left (runner/ps/worker_buffers.h).
    in.control.send(at::cat({t, WorkerBuffers::pack(*in.model)}), 0, kStatsTag);
  };
  if (plan.enabled())
    hooks.checkpoint = [&](int64_t version, int64_t steps, int64_t code) {
      TensorMap state;
      const LoaderPosition pos = loader.position();
      state["ps.worker.numbers"] =
          at::tensor({steps, epoch, pos.epoch, pos.cursor, version, code}, at::kLong);
      state["loader.rng"] = bytes_tensor(pos.rng_state);
      for (const auto& b : in.model->named_buffers())
        state["model.buffer." + b.key()] = b.value().detach().clone();
      if (lag) {
        lag->save(state, "ps.lag.");
        for (size_t i = 0; i < previous.size(); ++i)
          state["ps.lag.previous." + std::to_string(i)] = previous[i].clone();
      }
      save_cpu_rng(state);
      save_comm_totals(state, in.comm);
      plan.write(version, state, in.control);
    };
  std::unique_ptr<PsWorkerResume> resume;
  if (in.resume_step >= 0) {
    const TensorMap state = plan.dir->read(in.resume_step);
    const at::Tensor n = need(state, "ps.worker.numbers").contiguous();
    if (n.scalar_type() != at::kLong || n.numel() != 6)
      throw std::runtime_error("checkpoint: 'ps.worker.numbers' is not 6 int64");
    const int64_t* v = n.data_ptr<int64_t>();
    resume = std::make_unique<PsWorkerResume>(PsWorkerResume{v[0], v[4], v[5]});
    epoch = v[1];
    loader.restore(LoaderPosition{v[2], v[3], tensor_bytes(need(state, "loader.rng"))});
    {
      torch::NoGradGuard no_grad;
      for (auto& b : in.model->named_buffers())
        copy_into(b.value(), need(state, "model.buffer." + b.key()), b.key());
    }
    if (lag) {
      lag->restore(state, "ps.lag.");
      previous.clear();
      for (size_t i = 0; i < params.size(); ++i) {
        auto it = state.find("ps.lag.previous." + std::to_string(i));
        if (it != state.end()) previous.push_back(it->second.clone());
      }
    }
    restore_cpu_rng(state);
    restore_comm_totals(state, in.comm);
  }
  PsWorker worker(in.comm, layout, params, std::move(hooks));
  raise_stop(worker.run(resume.get()), "");
}

}  // namespace

RunSummary run_parameter_server(const PsRunInputs& in) {
  {
    // Every rank starts from rank 0's model: its parameters and its buffers.
    torch::NoGradGuard no_grad;
    for (auto& p : in.model->parameters()) in.control.broadcast(p, 0);
    for (auto& b : in.model->buffers()) in.control.broadcast(b, 0);
  }
  const PsLayout layout =
      make_ps_layout(parameter_numels(*in.model), static_cast<int>(in.ps.servers), in.comm.size());
  const int rank = in.comm.rank();
  const ExperimentConfig& cfg = in.cfg;
  const int worker = layout.is_server(rank) ? 0 : layout.worker_of_rank(rank);
  Augmentation aug = cfg.data.augment ? in.data.train_aug : Augmentation{};
  ShardedLoader loader(in.data.train, in.data.norm, aug, cfg.train.batch_size, worker,
                       layout.workers, cfg.train.seed, /*shuffle=*/true, /*drop_last=*/true);
  const int64_t steps_per_epoch = loader.batches_per_epoch();
  if (steps_per_epoch == 0)
    throw ConfigError("train.batch_size " + std::to_string(cfg.train.batch_size) + " x " +
                      std::to_string(layout.workers) + " workers exceeds the " +
                      std::to_string(in.data.train.count) + " training images");
  const bool bsp = in.ps.mode == "bsp";
  const int64_t steps =
      cfg.train.max_steps > 0 ? cfg.train.max_steps : cfg.train.epochs * steps_per_epoch;
  const int64_t per_update = bsp ? 1 : layout.workers;  // gradients per update
  const int64_t updates_per_epoch = steps_per_epoch * per_update;
  const double base_lr = scaled_base_lr(cfg.optimizer, layout.workers, cfg.train.batch_size);
  const std::function<double(int64_t)> lr_at = [&cfg, base_lr, updates_per_epoch](int64_t version) {
    const int64_t epoch = version / updates_per_epoch, i = version % updates_per_epoch;
    const double epoch_f = epoch + double(i) / updates_per_epoch;
    return learning_rate(cfg.optimizer, base_lr, epoch_f, static_cast<double>(cfg.train.epochs));
  };
  PsCheckpointPlan plan;
  plan.dir = in.checkpoints;
  if (!bsp && layout.servers > 1 && plan.enabled()) {
    // Each server's version moves on its own: a snapshot of them together would need every
    // worker to wait for every server at once, which nothing here arranges. (So no checkpoint of
    // such a run exists, and --resume of one starts it afresh.)
    if (rank == 0)
      log_warn("ps: no checkpoints in mode " + in.ps.mode + " with " +
               std::to_string(layout.servers) +
               " servers (their versions move on independently); the run cannot be resumed");
    plan.dir = nullptr;
  }
  plan.every = cfg.train.checkpoint_every_steps;
  plan.updates_per_epoch = updates_per_epoch;
  if (in.resume_step >= 0 && !plan.enabled())
    throw ConfigError("train.checkpoint is off: there is no checkpoint to resume from");
  if (!layout.is_server(rank)) {
    work(in, layout, loader, lr_at, plan);
    return RunSummary{};
  }
  PsServerOptions options;
  options.mode = in.ps.mode;
  options.staleness = in.ps.staleness;
  options.budget = steps * per_update;
  options.momentum = in.ps.upload != "lag";
  read_hold(options);
  if (rank == 0 && !in.quiet)
    log_info(strprintf("ps: %s%s, %d server(s), %d worker(s), %lld updates of %lld gradient(s)",
                       in.ps.mode.c_str(), in.ps.upload == "lag" ? " with LAG uploads" : "",
                       layout.servers, layout.workers, static_cast<long long>(options.budget),
                       static_cast<long long>(bsp ? layout.workers : 1)));
  return serve(in, layout, std::move(options), lr_at, plan, updates_per_epoch);
}

}  // namespace cedar
