#pragma once
// One server of a parameter-server run (algorithms/parameter_server.cpp for the modes, the
// messages in runner/ps/protocol.h): it receives the workers' pushes, applies them to its
// shard with the configured optimizer and answers each with the shard's parameters, until every
// worker has left. The server decides the stop: once `budget` updates are applied (or its
// parameters stop being finite, or a signal arrived), every reply says stop and why, and each
// worker answers it by leaving. It also decides the checkpoints: when one is due it waits until
// every worker waits for its reply (bsp: at the end of each round; ssp / asp: replies are held
// back until then), tells every worker to write its checkpoint, writes its own, and goes on.
#include <ATen/core/Tensor.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "comm/communicator.h"
#include "config/experiment_config.h"
#include "runner/ps/clock_gate.h"
#include "runner/ps/layout.h"
#include "runner/train/checkpoint.h"

namespace cedar {

class Optimizer;

struct PsServerOptions {
  std::string mode = "bsp";  // bsp, ssp or asp
  int64_t staleness = 0;     // ssp's bound in clocks
  int64_t budget = 0;        // updates to apply: bsp rounds, ssp / asp gradients
  bool momentum = true;      // false: plain gradient steps (LAG), optimizer.momentum unused
  // Tests (CEDAR_PS_HOLD_WORKER): each push of worker hold_worker waits, unapplied, until
  // hold_updates gradients of other workers have been applied after it arrived, or until no other
  // worker can push any more (each has left or waits for its ssp reply); and no other worker's
  // push is applied before hold_worker's first one arrived. Makes that worker the provably slow
  // one: in asp its first gradient, computed on version 0, is applied at version hold_updates.
  int hold_worker = -1;
  int64_t hold_updates = 0;
};

// An applied update, for the run's records.
struct PsUpdate {
  int64_t version = 0;       // the shard's version after it (1, 2, ...)
  std::vector<int> workers;  // whose gradients it applied (bsp: every worker, in order)
  int64_t staleness = 0;     // versions applied between the gradient's pull and this update
  int64_t uploads = 0;       // gradients sent for it (bsp with LAG: the workers that did not skip)
  double lr = 0;
  bool last = false;  // the budget is reached: replies from now on say stop
};

struct PsServerHooks {
  // After a worker's push (header and body) arrived, before anything is applied.
  std::function<void(int worker)> on_push;
  // After each update, before its replies.
  std::function<void(const PsUpdate&)> on_update;
  // After the replies to the update that made `version` were sent (ssp: those not held back).
  std::function<void(int64_t version)> on_answered;
  // Whether a checkpoint is due once `version` updates are applied (null: never).
  std::function<bool(int64_t version)> checkpoint_due;
  // Every worker waits for its reply and has been told to write its checkpoint of `version`:
  // writes this server's (PsServer::save) and commits it with the other ranks.
  std::function<void(int64_t version)> on_checkpoint;
  // Once, when this server first decides the stop (budget, divergence, signal), with its code.
  std::function<void(int64_t code)> on_stop;
};

class PsServer {
 public:
  // `params`: every parameter of the model in model order; this server updates those of its
  // shard (layout.server_of) in place. `lr_at(v)`: the learning rate of the update that makes
  // version v + 1.
  PsServer(Communicator& comm, const PsLayout& layout, int server,
           const std::vector<NamedTensor>& params, const OptimizerConfig& optimizer,
           PsServerOptions options, std::function<double(int64_t)> lr_at, PsServerHooks hooks);
  ~PsServer();

  // Serves until every worker has left, then waits until its replies are delivered. Replies are
  // posted (Communicator::post), so a server never waits for a worker that is busy with another
  // server: with several servers, the only waits are receives. `resumed`: the state came from
  // restore(), every worker waits for the reply to its last push (as at the checkpoint), and gets
  // it first.
  void run(bool resumed = false);
  int64_t version() const { return version_; }
  // Ends the run at the next reply with kStopDiverged (e.g. the evaluated model's loss is not
  // finite); `why` becomes stop_reason().
  void diverge(std::string why);
  // Ends the run at the next reply with `code` (a stop ReplyCode) for the reason `why`, as
  // another server's end makes rank 0 do (runner/ps/run.cpp).
  void stop_as(int64_t code, std::string why) { stop_with(code, std::move(why)); }
  // Why the run ended (a ReplyCode: the first stop of this server or, from a worker's goodbye,
  // another server's) and, where this server decided it, in words.
  int64_t stop_code() const { return stop_code_; }
  const std::string& stop_reason() const { return stop_reason_; }
  // The checkpoint state of this server at a checkpoint (version, per-worker clocks and counts,
  // the shard's parameters and optimizer buffers, LAG's last uploads) and its restoration.
  void save(TensorMap& state) const;
  void restore(const TensorMap& state);

 private:
  struct Push {
    int worker = 0;
    int64_t computed_on = 0;
    int64_t others_applied_at_arrival = 0;  // for the tests' hold
    at::Tensor gradient;
    bool skipped = false;  // LAG: no gradient sent (bsp reuses the worker's last one)
  };
  void run_bsp(bool resumed);
  void run_async();
  // Receives the next push header (and body); false for a worker leaving.
  bool receive(Push& push);
  // ssp / asp: applies every held push that may be applied, answering the workers that may go on.
  void drain();
  bool releasable(const Push& push) const;
  void apply(const at::Tensor& direction, std::vector<int> workers, int64_t staleness,
             int64_t uploads);
  void reply(int worker, bool stop);
  // Stops the run with `code` (the first stop wins).
  void stop_with(int64_t code, std::string why);
  // The workers' signals (push headers) and, with one server, this process's own.
  void note_signal(int64_t signal);
  // Stops with kStopInterrupted, naming interrupted_by_ and the update; `note` is appended.
  void interrupt(const std::string& note);
  // When a checkpoint is due or pending and every present worker waits: writes it.
  void checkpoint_if_quiescent();
  bool shard_finite(std::string& bad) const;

  Communicator& comm_;
  const PsLayout& layout_;
  int server_;
  PsServerOptions options_;
  std::function<double(int64_t)> lr_at_;
  PsServerHooks hooks_;
  std::vector<at::Tensor> shard_params_;
  std::vector<std::string> shard_names_;
  at::Tensor gradient_;  // the shard's update direction, flat; the optimizer's grads view it
  std::unique_ptr<Optimizer> optimizer_;
  int64_t version_ = 0;
  bool stopped_ = false;
  int64_t stop_code_ = 0;  // ReplyCode
  std::string stop_reason_;
  bool checkpoint_pending_ = false;
  int64_t interrupted_by_ = 0;  // the signal that asks for a stop
  int active_ = 0;
  std::vector<bool> present_;
  ClockGate gate_;
  std::deque<Push> held_;
  std::vector<bool> waiting_;     // a worker whose gradient was applied, its reply waiting (ssp)
  std::vector<bool> body_due_;    // its reply's header went out at a checkpoint (kCheckpoint)
  std::vector<int64_t> applied_;  // gradients applied per worker
  // bsp: each worker's last gradient and the version it was computed on (reused when it skips).
  std::vector<at::Tensor> last_gradient_;
  std::vector<int64_t> last_computed_on_;
  int64_t applied_total_ = 0;
  bool hold_worker_pushed_ = false;
};

}  // namespace cedar
