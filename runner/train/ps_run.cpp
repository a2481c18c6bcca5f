#include "runner/train/ps_run.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "runner/train/checkpoint_state.h"
#include "runner/train/evaluator.h"
#include "runner/train/hold_for_signal.h"
#include "runner/train/log.h"
#include "runner/train/lr_schedule.h"
#include "runner/train/ps_checkpoint.h"
#include "runner/train/ps_lag_rule.h"
#include "runner/train/ps_layout.h"
#include "runner/train/ps_protocol.h"
#include "runner/train/ps_server.h"
#include "runner/train/ps_worker.h"
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

// Rank 0's records: the workers' statistics as they arrive, a step row per update, evaluations.
class PsRecorder {
 public:
  PsRecorder(const PsRunInputs& in, const PsLayout& layout, int64_t updates_per_epoch)
      : in_(in), layout_(layout), updates_per_epoch_(updates_per_epoch), stats_(layout.workers) {
    for (const auto& p : in.model->parameters()) dense_bytes_ += p.numel() * 4;
    start_ = monotonic_seconds();
  }

  void receive_stats(int worker) {
    at::Tensor t = at::empty({kStatsWords}, at::kDouble);
    in_.control.recv(t, layout_.rank_of_worker(worker), kStatsTag);
    const double* v = t.data_ptr<double>();
    stats_[static_cast<size_t>(worker)] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
  }

  // Whether the training losses of u's gradients are finite; else `why` says whose is not.
  bool losses_finite(const PsUpdate& u, std::string& why) const {
    for (int w : u.workers) {
      const double loss = stats_[static_cast<size_t>(w)].loss_sum;
      if (std::isfinite(loss)) continue;
      why = "update " + std::to_string(u.version) + ": the training loss of worker " +
            std::to_string(w) + " is " + std::to_string(loss);
      return false;
    }
    return true;
  }

  void record(const PsUpdate& u) {
    double loss = 0, correct = 0, count = 0, compute = 0, comm = 0, latency = 0, epoch = 0;
    int64_t payload = 0, bus = 0;
    for (int w : u.workers) {
      const WorkerStepStats& s = stats_[static_cast<size_t>(w)];
      loss += s.loss_sum;
      correct += s.correct;
      count += s.count;
      compute += s.compute_seconds;
      comm += s.comm_seconds;
      payload += static_cast<int64_t>(s.payload_bytes);
      bus += static_cast<int64_t>(s.bus_bytes);
      latency += s.latency_steps;
      epoch = std::max(epoch, s.epoch);
    }
    const double n = static_cast<double>(std::max<size_t>(1, u.workers.size()));
    epoch_loss_ += loss;
    epoch_correct_ += correct;
    epoch_count_ += count;
    cum_payload_ += payload;
    cum_bus_ += bus;
    if (in_.store) {
      StepRow row;
      row.step = u.version - 1;
      row.epoch = (u.version - 1) / updates_per_epoch_;
      row.wall_seconds = monotonic_seconds() - start_;
      row.compute_seconds = compute / n;
      row.comm_seconds = comm / n;
      row.payload_bytes = static_cast<int64_t>(std::llround(double(payload) / n));
      row.bus_bytes = static_cast<int64_t>(std::llround(double(bus) / n));
      row.payload_bytes_all = payload;
      row.cum_payload_bytes = per_worker(cum_payload_);
      row.cum_bus_bytes = per_worker(cum_bus_);
      row.dense_bytes = dense_bytes_;
      row.train_loss = loss / std::max(1.0, count);
      row.train_accuracy = correct / std::max(1.0, count);
      row.learning_rate = u.lr;
      row.latency_steps = static_cast<int64_t>(latency / n);
      row.modeled_comm_seconds = 0;
      row.stats.push_back({"staleness", static_cast<double>(u.staleness)});
      row.stats.push_back({"gradients", static_cast<double>(u.workers.size())});
      if (u.workers.size() == 1) row.stats.push_back({"worker", u.workers[0]});
      if (in_.ps.upload == "lag") row.stats.push_back({"uploads", double(u.uploads)});
      in_.store->add_step(in_.run_id, row);
    }
  }

  // The test loss of the server-held model.
  double evaluate_now(int64_t version) {
    LocalCommunicator alone;
    const EvalResult r =
        evaluate(*in_.model, in_.data.test, in_.data.norm,
                 std::max<int64_t>(in_.cfg.train.batch_size, 256), in_.device, alone);
    if (!std::isfinite(r.loss)) return r.loss;  // the run diverged: no evaluation row
    last_accuracy_ = r.accuracy;
    best_accuracy_ = std::max(best_accuracy_, r.accuracy);
    const double epoch = double(version) / double(updates_per_epoch_);
    if (in_.store)
      in_.store->add_eval(in_.run_id, eval_row(r, version, epoch, monotonic_seconds() - start_,
                                               per_worker(cum_payload_), per_worker(cum_bus_),
                                               epoch_loss_, epoch_correct_, epoch_count_));
    if (!in_.quiet)
      log_info(strprintf(
          "ps: %lld updates (epoch %.2f) | train loss %.4f acc %.2f%% | test acc "
          "%.2f%% (server-held model) | payload %.2f MB per worker",
          static_cast<long long>(version), epoch, epoch_loss_ / std::max(1.0, epoch_count_),
          100.0 * epoch_correct_ / std::max(1.0, epoch_count_), 100.0 * r.accuracy,
          cum_payload_ / 1e6 / layout_.workers));
    epoch_loss_ = epoch_correct_ = epoch_count_ = 0;
    return r.loss;
  }

  void save(TensorMap& state) const {
    state["ps.recorder"] =
        at::tensor({double(cum_payload_), double(cum_bus_), epoch_loss_, epoch_correct_,
                    epoch_count_, last_accuracy_, best_accuracy_, monotonic_seconds() - start_},
                   at::kDouble);
  }

  void restore(const TensorMap& state) {
    const at::Tensor t = need(state, "ps.recorder").contiguous();
    if (t.scalar_type() != at::kDouble || t.numel() != 8)
      throw std::runtime_error("checkpoint: 'ps.recorder' is not 8 doubles");
    const double* v = t.data_ptr<double>();
    cum_payload_ = static_cast<int64_t>(v[0]);
    cum_bus_ = static_cast<int64_t>(v[1]);
    epoch_loss_ = v[2];
    epoch_correct_ = v[3];
    epoch_count_ = v[4];
    last_accuracy_ = v[5];
    best_accuracy_ = v[6];
    start_ = monotonic_seconds() - v[7];
  }

  RunSummary summary() const {
    RunSummary s;
    s.final_test_accuracy = last_accuracy_;
    s.best_test_accuracy = best_accuracy_;
    s.wall_seconds = monotonic_seconds() - start_;
    s.total_payload_bytes = per_worker(cum_payload_);
    s.total_bus_bytes = per_worker(cum_bus_);
    return s;
  }

 private:
  // The workers' pushes so far, per worker (what one all-reduce rank's counters would say).
  int64_t per_worker(int64_t bytes) const {
    return static_cast<int64_t>(std::llround(double(bytes) / layout_.workers));
  }

  const PsRunInputs& in_;
  const PsLayout& layout_;
  int64_t updates_per_epoch_;
  std::vector<WorkerStepStats> stats_;
  int64_t dense_bytes_ = 0, cum_payload_ = 0, cum_bus_ = 0;
  double epoch_loss_ = 0, epoch_correct_ = 0, epoch_count_ = 0;
  double start_ = 0, last_accuracy_ = 0, best_accuracy_ = 0;
};

// The shards of servers 1..S-1 reach rank 0 for its evaluations over the control channel, posted
// (Communicator::post): a server never waits for rank 0, which may itself be waiting for that
// server. Each server posts, in order, a header {version, kShardFollows, 0} and its shard at every
// version rank 0 evaluates, and one {version, kShardsEnd, stop code} when it decides the stop or,
// failing that, when its workers have left. Rank 0 takes them in the same order. It cannot wait
// for ever: a server that has not reached rank 0's version has received fewer pushes than rank 0,
// and every push rank 0 received goes on to the other servers (workers push to servers 0..S-1 in
// turn), which apply it unless they stop, and then say so.
class ShardRelay {
 public:
  static constexpr int64_t kShardFollows = 0, kShardsEnd = 1;

  ShardRelay(Communicator& control, const PsLayout& layout, int server,
             const std::vector<at::Tensor>& params)
      : control_(control),
        layout_(layout),
        server_(server),
        params_(params),
        end_code_(static_cast<size_t>(layout.servers), kNotEnded) {}

  // A server other than 0: its shard of `version`, for rank 0's evaluation.
  void post_shard(int64_t version) {
    if (server_ == 0 || end_posted_) return;
    control_.post(at::tensor({version, kShardFollows, int64_t{0}}, at::kLong), 0, kShardTag);
    control_.post(flatten_shard(params_, layout_, server_), 0, kShardBodyTag);
  }
  // A server other than 0: no shards after this one (once, at its stop or its end).
  void post_end(int64_t version, int64_t code) {
    if (server_ == 0 || end_posted_) return;
    end_posted_ = true;
    control_.post(at::tensor({version, kShardsEnd, code}, at::kLong), 0, kShardTag);
  }
  // Rank 0: every other server's shard of `version` into params. False when a server ended
  // first; `code` is then its stop code and `who` the server.
  bool gather(int64_t version, int64_t& code, int& who) {
    for (int s = 1; s < layout_.servers; ++s) {
      const int64_t shard_version = ended(s) ? 0 : next_header(s);
      if (ended(s)) {
        code = end_code_[static_cast<size_t>(s)];
        who = s;
        return false;
      }
      if (shard_version != version)
        throw CommError("ps: server " + std::to_string(s) + " sent its shard of version " +
                        std::to_string(shard_version) + " for rank 0's evaluation of version " +
                        std::to_string(version));
      unflatten_shard(receive_shard(s), params_, layout_, s);
    }
    return true;
  }
  // Rank 0, at its end: takes what the other servers still post, up to their ends; then every
  // rank waits for its own posts to be delivered.
  void finish(int64_t version, int64_t code) {
    post_end(version, code);
    if (server_ == 0)
      for (int s = 1; s < layout_.servers; ++s)
        while (!ended(s)) {
          next_header(s);
          if (!ended(s)) receive_shard(s);
        }
    control_.wait_posted();
  }

 private:
  static constexpr int64_t kNotEnded = -1;
  bool ended(int s) const { return end_code_[static_cast<size_t>(s)] != kNotEnded; }
  // Server s's next header: the version of the shard that follows, or, for its end, the version
  // it ended at (its stop code noted).
  int64_t next_header(int s) {
    at::Tensor t = at::empty({3}, at::kLong);
    control_.recv(t, s, kShardTag);
    const int64_t* v = t.data_ptr<int64_t>();
    if (v[1] == kShardsEnd) end_code_[static_cast<size_t>(s)] = v[2];
    return v[0];
  }
  at::Tensor receive_shard(int s) {
    at::Tensor flat = at::empty({layout_.shard_numel[static_cast<size_t>(s)]}, at::kFloat);
    control_.recv(flat, s, kShardBodyTag);
    return flat;
  }

  Communicator& control_;
  const PsLayout& layout_;
  int server_;
  const std::vector<at::Tensor>& params_;
  std::vector<int64_t> end_code_;  // rank 0: each server's stop code once it ended
  bool end_posted_ = false;        // a server other than 0: its end is posted
};

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
    in.control.send(t, 0, kStatsTag);
  };
  if (plan.enabled())
    hooks.checkpoint = [&](int64_t version, int64_t steps, int64_t code) {
      TensorMap state;
      const LoaderPosition pos = loader.position();
      state["ps.worker.numbers"] =
          at::tensor({steps, epoch, pos.epoch, pos.cursor, version, code}, at::kLong);
      state["loader.rng"] = bytes_tensor(pos.rng_state);
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

void check_parameter_server_run(const ExperimentConfig& cfg, const ParameterServerParams& ps,
                                int world_size, const Model& model) {
  const std::string where = cfg.source.file.empty() ? "the configuration" : cfg.source.file;
  auto fail = [&](const std::string& what) { throw ConfigError(where + ": " + what); };
  if (cfg.train.amp != "off")
    fail("train.amp '" + cfg.train.amp + "': algorithm ps trains in fp32 (use train.amp: off)");
  if (ps.servers >= world_size)
    fail("algorithm.servers " + std::to_string(ps.servers) + " leaves no worker among world size " +
         std::to_string(world_size) + " (servers must be fewer than the ranks)");
  if (ps.upload == "lag" && ps.mode != "bsp")
    fail("algorithm.upload lag with mode " + ps.mode +
         ": LAG's rule is stated for synchronous "
         "rounds (use mode: bsp)");
  if (cfg.train.overlap) fail("train.overlap is not supported with algorithm ps");
  if (cfg.train.device != "cpu")
    fail("train.device '" + cfg.train.device + "': algorithm ps runs on the CPU (backend mpi)");
  if (!model.buffers().empty())
    fail("model.name '" + cfg.model.name +
         "' has buffers (batch-norm statistics), which algorithm ps does not carry to the "
         "servers: use a model without batch norm (lenet5)");
  const auto params = model.parameters();
  if (static_cast<int64_t>(params.size()) < ps.servers)
    fail("algorithm.servers " + std::to_string(ps.servers) + " for a model of " +
         std::to_string(params.size()) + " parameter tensors: a server would hold nothing");
}

RunSummary run_parameter_server(const PsRunInputs& in) {
  {
    torch::NoGradGuard no_grad;
    for (auto& p : in.model->parameters()) in.control.broadcast(p, 0);
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
