#include "runner/ps/server.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <string>

#include "runner/ps/protocol.h"
#include "runner/train/checkpoint_state.h"
#include "runner/train/optimizer.h"
#include "runner/train/run_guard.h"

namespace cedar {

PsServer::PsServer(Communicator& comm, const PsLayout& layout, int server,
                   const std::vector<NamedTensor>& params, const OptimizerConfig& optimizer,
                   PsServerOptions options, std::function<double(int64_t)> lr_at,
                   PsServerHooks hooks)
    : comm_(comm),
      layout_(layout),
      server_(server),
      options_(std::move(options)),
      lr_at_(std::move(lr_at)),
      hooks_(std::move(hooks)),
      active_(layout.workers),
      present_(static_cast<size_t>(layout.workers), true),
      gate_(layout.workers, options_.mode == "ssp" ? options_.staleness : -1),
      waiting_(static_cast<size_t>(layout.workers), false),
      body_due_(static_cast<size_t>(layout.workers), false),
      applied_(static_cast<size_t>(layout.workers), 0),
      last_gradient_(static_cast<size_t>(layout.workers)),
      last_computed_on_(static_cast<size_t>(layout.workers), 0) {
  gradient_ = at::zeros({layout.shard_numel[static_cast<size_t>(server)]}, at::kFloat);
  std::vector<NamedTensor> shard;
  std::vector<at::Tensor> grads;
  int64_t offset = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (layout.server_of[i] != server) continue;
    const at::Tensor p = params[i].tensor.detach();
    shard.push_back({params[i].name, p});
    shard_params_.push_back(p);
    shard_names_.push_back(params[i].name);
    grads.push_back(gradient_.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  MomentumPlan plan;
  plan.optimizer_momentum = options_.momentum;
  optimizer_ = make_optimizer(optimizer, shard, grads, plan);
}

PsServer::~PsServer() = default;

void PsServer::run(bool resumed) {
  if (resumed)
    for (int w = 0; w < layout_.workers; ++w) waiting_[static_cast<size_t>(w)] = true;
  if (options_.mode == "bsp") {
    run_bsp(resumed);
  } else {
    run_async();
  }
  comm_.wait_posted();
}

void PsServer::stop_with(int64_t code, std::string why) {
  if (stopped_ && stop_code_ != kStopCompleted) return;
  const bool first = !stopped_;
  stopped_ = true;
  stop_code_ = code;
  stop_reason_ = std::move(why);
  checkpoint_pending_ = false;
  if (first && hooks_.on_stop) hooks_.on_stop(code);
}

void PsServer::diverge(std::string why) { stop_with(kStopDiverged, std::move(why)); }

void PsServer::interrupt(const std::string& note) {
  stop_with(kStopInterrupted, std::string("interrupted by SIG") +
                                  sigabbrev_np(static_cast<int>(interrupted_by_)) + " at update " +
                                  std::to_string(version_) + note);
}

void PsServer::note_signal(int64_t signal) {
  if (signal == 0 || interrupted_by_ != 0 || stopped_) return;
  interrupted_by_ = signal;
  // Without checkpoints the run stops at once; with them, once the checkpoint is written.
  if (hooks_.checkpoint_due) {
    checkpoint_pending_ = true;
  } else {
    interrupt("");
  }
}

bool PsServer::receive(Push& push) {
  at::Tensor header = at::empty({kPushHeaderWords}, at::kLong);
  int64_t words = 0;
  const int sender = comm_.recv_any_up_to(header, kPushHeaderTag, words);
  if (layout_.is_server(sender))
    throw CommError("ps server " + std::to_string(server_) + ": a push from rank " +
                    std::to_string(sender) + ", which is a server");
  const int worker = layout_.worker_of_rank(sender);
  const int64_t* h = header.data_ptr<int64_t>();
  push.skipped = words == 0;
  if (!push.skipped && words != kPushHeaderWords)
    throw CommError("ps server " + std::to_string(server_) + ": a push header of " +
                    std::to_string(words) + " words from rank " + std::to_string(sender));
  if (!push.skipped && h[0] == kLeaving) {
    present_[static_cast<size_t>(worker)] = false;
    --active_;
    gate_.leave(worker);
    if (is_stop(h[3]) && h[3] != kStopCompleted && stop_code_ != h[3]) {
      stop_code_ = std::max(stop_code_, h[3]);
      stopped_ = true;
    }
    return false;
  }
  if (!push.skipped && h[0] != kGradient)
    throw CommError("ps server " + std::to_string(server_) + ": push of unknown kind " +
                    std::to_string(h[0]) + " from rank " + std::to_string(sender));
  push.worker = worker;
  if (worker == options_.hold_worker) hold_worker_pushed_ = true;
  push.others_applied_at_arrival = applied_total_ - applied_[static_cast<size_t>(worker)];
  if (push.skipped && options_.mode != "bsp")
    throw CommError("ps server " + std::to_string(server_) + ": a skipped upload from rank " +
                    std::to_string(sender) + " in mode " + options_.mode + " (LAG runs in bsp)");
  if (!push.skipped) {
    push.computed_on = h[2];
    note_signal(h[3]);
    push.gradient = at::empty({gradient_.numel()}, at::kFloat);
    comm_.recv(push.gradient, sender, kPushBodyTag);
  }
  if (layout_.servers == 1) note_signal(stop_signal());
  if (hooks_.on_push) hooks_.on_push(worker);
  return true;
}

bool PsServer::shard_finite(std::string& bad) const {
  for (size_t i = 0; i < shard_params_.size(); ++i)
    if (!at::isfinite(shard_params_[i]).all().item<bool>()) {
      bad = shard_names_[i];
      return false;
    }
  return true;
}

void PsServer::apply(const at::Tensor& direction, std::vector<int> workers, int64_t staleness,
                     int64_t uploads) {
  gradient_.copy_(direction);
  const double lr = lr_at_(version_);
  optimizer_->step(lr);
  ++version_;
  if (version_ >= options_.budget) stop_with(kStopCompleted, "");
  std::string bad;
  if (!shard_finite(bad))
    diverge("update " + std::to_string(version_) + ": the parameters of " + bad +
            " are not finite (server " + std::to_string(server_) + ")");
  if (hooks_.checkpoint_due && !stopped_ && hooks_.checkpoint_due(version_))
    checkpoint_pending_ = true;
  if (hooks_.on_update)
    hooks_.on_update({version_, std::move(workers), staleness, uploads, lr, stopped_});
}

void PsServer::reply(int worker, bool stop) {
  const int rank = layout_.rank_of_worker(worker);
  if (body_due_[static_cast<size_t>(worker)]) {
    // Its header (kCheckpoint) went out at the checkpoint, nothing was applied since.
    body_due_[static_cast<size_t>(worker)] = false;
  } else {
    const at::Tensor header = at::tensor(
        {version_, stop ? std::max<int64_t>(stop_code_, kStopCompleted) : int64_t{0}}, at::kLong);
    comm_.post(header, rank, kReplyHeaderTag);
    if (stop) return;
  }
  std::vector<at::Tensor> flat;
  for (const auto& p : shard_params_) flat.push_back(p.reshape({-1}));
  comm_.post(at::cat(flat), rank, kReplyBodyTag);  // a new tensor: nothing writes it again
}

void PsServer::checkpoint_if_quiescent() {
  if (!checkpoint_pending_ || stopped_ || !held_.empty()) return;
  for (int w = 0; w < layout_.workers; ++w)
    if (present_[static_cast<size_t>(w)] && !waiting_[static_cast<size_t>(w)]) return;
  checkpoint_pending_ = false;
  // The header of each worker's reply says checkpoint: the body follows it afterwards (the
  // answer costs what it would have), the run stops there, or (ssp, a worker beyond the bound)
  // a whole reply comes later.
  for (int w = 0; w < layout_.workers; ++w) {
    const size_t i = static_cast<size_t>(w);
    if (!present_[i]) continue;
    body_due_[i] = gate_.may_start(w);
    int64_t code = body_due_[i] ? kCheckpoint : kCheckpointWait;
    if (interrupted_by_ != 0) code = body_due_[i] ? kCheckpointStop : kCheckpointStopWait;
    comm_.post(at::tensor({version_, code}, at::kLong), layout_.rank_of_worker(w), kReplyHeaderTag);
  }
  // A resumed run takes up here as if the run had gone on (body_due_ is saved as it stands).
  hooks_.on_checkpoint(version_);
  if (interrupted_by_ != 0) {
    std::fill(waiting_.begin(), waiting_.end(), false);
    std::fill(body_due_.begin(), body_due_.end(), false);
    interrupt(" (checkpoint written)");
  }
}

// Each round: one message from every worker still taking part; the gradients are summed in worker
// order and averaged, as an allreduce-average of the same gradients would.
void PsServer::run_bsp(bool resumed) {
  if (resumed) {
    std::fill(waiting_.begin(), waiting_.end(), false);
    for (int w = 0; w < layout_.workers; ++w) reply(w, false);
  }
  while (active_ > 0) {
    std::vector<at::Tensor> gradients(static_cast<size_t>(layout_.workers));
    std::vector<int> pushed;
    int64_t staleness = 0, uploads = 0;
    const int expected = active_;
    for (int m = 0; m < expected; ++m) {
      Push push;
      if (!receive(push)) continue;
      const size_t w = static_cast<size_t>(push.worker);
      if (push.skipped) {
        if (!last_gradient_[w].defined())
          throw CommError("ps server " + std::to_string(server_) + ": worker " +
                          std::to_string(push.worker) + " skipped its first upload");
      } else {
        ++uploads;
        last_gradient_[w] = std::move(push.gradient);
        last_computed_on_[w] = push.computed_on;
      }
      staleness = std::max(staleness, version_ - last_computed_on_[w]);
      gradients[w] = last_gradient_[w];
      pushed.push_back(push.worker);
    }
    if (pushed.empty()) continue;
    std::sort(pushed.begin(), pushed.end());
    if (!stopped_) {
      at::Tensor sum = gradients[static_cast<size_t>(pushed[0])].clone();
      for (size_t i = 1; i < pushed.size(); ++i)
        sum.add_(gradients[static_cast<size_t>(pushed[i])]);
      if (pushed.size() > 1) sum.div_(static_cast<double>(pushed.size()));
      apply(sum, pushed, staleness, uploads);
    }
    for (int w : pushed) waiting_[static_cast<size_t>(w)] = true;
    checkpoint_if_quiescent();
    for (int w : pushed) {
      if (!waiting_[static_cast<size_t>(w)]) continue;  // told at the checkpoint that it stops
      waiting_[static_cast<size_t>(w)] = false;
      reply(w, stopped_);
    }
    if (hooks_.on_answered) hooks_.on_answered(version_);
  }
}

void PsServer::run_async() {
  drain();
  while (active_ > 0) {
    Push push;
    if (receive(push)) {
      if (stopped_) {
        reply(push.worker, true);
        continue;
      }
      held_.push_back(std::move(push));
    }
    drain();
  }
}

bool PsServer::releasable(const Push& push) const {
  if (push.worker != options_.hold_worker)
    return options_.hold_worker < 0 || hold_worker_pushed_ ||
           !present_[static_cast<size_t>(options_.hold_worker)];
  const int64_t others =
      applied_total_ - applied_[static_cast<size_t>(push.worker)] - push.others_applied_at_arrival;
  if (others >= options_.hold_updates) return true;
  // Released anyway when every other worker has left or waits for its ssp reply: none of them
  // can push any more (one whose push is held here is applied first).
  for (int w = 0; w < layout_.workers; ++w)
    if (w != push.worker && present_[static_cast<size_t>(w)] && !waiting_[static_cast<size_t>(w)])
      return false;
  return true;
}

// Applies the held pushes that may be applied and answers the workers that may go on; while a
// checkpoint is pending nobody is answered, until every worker waits and it is written.
void PsServer::drain() {
  bool progress = true;
  while (progress && !stopped_) {
    progress = false;
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (!releasable(*it)) continue;
      Push push = std::move(*it);
      held_.erase(it);
      const size_t w = static_cast<size_t>(push.worker);
      ++applied_[w];
      ++applied_total_;
      gate_.applied(push.worker);
      const int64_t staleness = version_ - push.computed_on;
      apply(push.gradient.div_(static_cast<double>(layout_.workers)), {push.worker}, staleness, 1);
      waiting_[w] = true;
      progress = true;
      break;
    }
    checkpoint_if_quiescent();
    if (checkpoint_pending_) continue;
    for (int w = 0; w < layout_.workers; ++w) {
      if (!waiting_[static_cast<size_t>(w)] || !(stopped_ || gate_.may_start(w))) continue;
      waiting_[static_cast<size_t>(w)] = false;
      reply(w, stopped_);
      progress = true;
    }
    if (progress && hooks_.on_answered) hooks_.on_answered(version_);
  }
  if (!stopped_) return;
  for (int w = 0; w < layout_.workers; ++w)
    if (waiting_[static_cast<size_t>(w)]) {
      waiting_[static_cast<size_t>(w)] = false;
      reply(w, true);
    }
  for (const Push& p : held_) reply(p.worker, true);
  held_.clear();
}

void PsServer::save(TensorMap& state) const {
  auto longs = [](const std::vector<int64_t>& v) {
    return at::tensor(at::ArrayRef<int64_t>(v), at::kLong);
  };
  state["ps.server.numbers"] = at::tensor({version_, applied_total_}, at::kLong);
  state["ps.server.applied"] = longs(applied_);
  std::vector<int64_t> clocks;
  for (int w = 0; w < layout_.workers; ++w) clocks.push_back(gate_.clock(w));
  state["ps.server.clocks"] = longs(clocks);
  state["ps.server.last_computed_on"] = longs(last_computed_on_);
  state["ps.server.body_due"] = longs(std::vector<int64_t>(body_due_.begin(), body_due_.end()));
  for (size_t w = 0; w < last_gradient_.size(); ++w)
    if (last_gradient_[w].defined())
      state["ps.server.last_gradient." + std::to_string(w)] = last_gradient_[w].clone();
  for (size_t i = 0; i < shard_params_.size(); ++i)
    state["model.param." + shard_names_[i]] = shard_params_[i].clone();
  save_buffers(state, "optimizer.momentum.", optimizer_->momentum_buffers());
  save_buffers(state, "optimizer.wd_momentum.", optimizer_->weight_decay_buffers());
}

void PsServer::restore(const TensorMap& state) {
  const size_t workers = static_cast<size_t>(layout_.workers);
  auto longs = [&](const std::string& key, size_t n) {
    const at::Tensor t = need(state, key).contiguous();
    if (t.scalar_type() != at::kLong || static_cast<size_t>(t.numel()) != n)
      throw std::runtime_error("checkpoint: '" + key + "' does not hold " + std::to_string(n) +
                               " int64 (written for another number of workers?)");
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + n);
  };
  const std::vector<int64_t> numbers = longs("ps.server.numbers", 2);
  version_ = numbers[0];
  applied_total_ = numbers[1];
  applied_ = longs("ps.server.applied", workers);
  const std::vector<int64_t> clocks = longs("ps.server.clocks", workers);
  for (int w = 0; w < layout_.workers; ++w)
    for (int64_t c = 0; c < clocks[static_cast<size_t>(w)]; ++c) gate_.applied(w);
  last_computed_on_ = longs("ps.server.last_computed_on", workers);
  const std::vector<int64_t> due = longs("ps.server.body_due", workers);
  for (size_t w = 0; w < workers; ++w) body_due_[w] = due[w] != 0;
  for (size_t w = 0; w < workers; ++w) {
    auto it = state.find("ps.server.last_gradient." + std::to_string(w));
    if (it != state.end()) last_gradient_[w] = it->second.clone();
  }
  std::vector<NamedTensor> shard;
  for (size_t i = 0; i < shard_params_.size(); ++i) {
    copy_into(shard_params_[i], need(state, "model.param." + shard_names_[i]), shard_names_[i]);
    shard.push_back({shard_names_[i], shard_params_[i]});
  }
  restore_buffers(state, "optimizer.momentum.", shard, optimizer_->momentum_buffers());
  restore_buffers(state, "optimizer.wd_momentum.", shard, optimizer_->weight_decay_buffers());
  if (version_ >= options_.budget)
    throw std::runtime_error("checkpoint: version " + std::to_string(version_) +
                             " is already the run's last");
}

}  // namespace cedar
