#include "runner/train/ps_server.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "runner/train/optimizer.h"
#include "runner/train/ps_protocol.h"

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
    grads.push_back(gradient_.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  MomentumPlan plan;
  plan.optimizer_momentum = options_.momentum;
  optimizer_ = make_optimizer(optimizer, shard, grads, plan);
}

PsServer::~PsServer() = default;

void PsServer::run() {
  if (options_.mode == "bsp") {
    run_bsp();
  } else {
    run_async();
  }
}

bool PsServer::receive(Push& push) {
  at::Tensor header = at::empty({kPushHeaderWords}, at::kLong);
  const int sender = comm_.recv_any(header, kPushHeaderTag);
  if (layout_.is_server(sender))
    throw CommError("ps server " + std::to_string(server_) + ": a push from rank " +
                    std::to_string(sender) + ", which is a server");
  const int worker = layout_.worker_of_rank(sender);
  const int64_t* h = header.data_ptr<int64_t>();
  if (h[0] == kLeaving) {
    present_[static_cast<size_t>(worker)] = false;
    --active_;
    gate_.leave(worker);
    return false;
  }
  if (h[0] != kGradient && h[0] != kSkipped)
    throw CommError("ps server " + std::to_string(server_) + ": push of unknown kind " +
                    std::to_string(h[0]) + " from rank " + std::to_string(sender));
  push.worker = worker;
  push.computed_on = h[2];
  if (worker == options_.hold_worker) hold_worker_pushed_ = true;
  push.others_applied_at_arrival = applied_total_ - applied_[static_cast<size_t>(worker)];
  push.skipped = h[0] == kSkipped;
  if (push.skipped && options_.mode != "bsp")
    throw CommError("ps server " + std::to_string(server_) + ": a skipped upload from rank " +
                    std::to_string(sender) + " in mode " + options_.mode + " (LAG runs in bsp)");
  if (!push.skipped) {
    push.gradient = at::empty({gradient_.numel()}, at::kFloat);
    comm_.recv(push.gradient, sender, kPushBodyTag);
  }
  if (hooks_.on_push) hooks_.on_push(worker);
  return true;
}

void PsServer::apply(const at::Tensor& direction, std::vector<int> workers, int64_t staleness,
                     int64_t uploads) {
  gradient_.copy_(direction);
  const double lr = lr_at_(version_);
  optimizer_->step(lr);
  ++version_;
  stopped_ = version_ >= options_.budget;
  if (hooks_.on_update)
    hooks_.on_update({version_, std::move(workers), staleness, uploads, lr, stopped_});
}

void PsServer::reply(int worker, bool stop) {
  const at::Tensor header = at::tensor({version_, int64_t{stop ? 1 : 0}}, at::kLong);
  const int rank = layout_.rank_of_worker(worker);
  comm_.send(header, rank, kReplyHeaderTag);
  if (stop) return;
  std::vector<at::Tensor> flat;
  for (const auto& p : shard_params_) flat.push_back(p.reshape({-1}));
  comm_.send(at::cat(flat), rank, kReplyBodyTag);
}

// Each round: one message from every worker still taking part; the gradients are summed in worker
// order and averaged, as an allreduce-average of the same gradients would.
void PsServer::run_bsp() {
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
    for (int w : pushed) reply(w, stopped_);
    if (hooks_.on_answered) hooks_.on_answered(version_);
  }
}

void PsServer::run_async() {
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

}  // namespace cedar
