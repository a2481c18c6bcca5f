#include "runner/ps/worker.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <string>

#include "runner/ps/protocol.h"
#include "runner/train/run_guard.h"

namespace cedar {
namespace {

std::vector<std::array<int64_t, 2>> reply_headers(Communicator& comm, int servers) {
  std::vector<std::array<int64_t, 2>> headers(static_cast<size_t>(servers));
  for (int server = 0; server < servers; ++server) {
    at::Tensor header = at::empty({kReplyHeaderWords}, at::kLong);
    comm.recv(header, server, kReplyHeaderTag);
    headers[static_cast<size_t>(server)] = {header[0].item<int64_t>(), header[1].item<int64_t>()};
  }
  return headers;
}

// What follows a checkpoint in each server's reply: its body (kCheckpoint), a whole reply
// (kCheckpointWait) or the stop (kCheckpointStop).
void after_checkpoint(Communicator& comm, int servers, int64_t code,
                      std::vector<std::array<int64_t, 2>>& headers) {
  if (code == kCheckpointWait) {
    headers = reply_headers(comm, servers);
    return;
  }
  for (auto& h : headers) h[1] = code == kCheckpoint ? kContinue : kStopInterrupted;
}

}  // namespace

int64_t PsWorker::run(const PsWorkerResume* resume) {
  const int servers = layout_.servers;
  std::vector<int64_t> version(static_cast<size_t>(servers), 0);
  steps_ = resume ? resume->steps : 0;
  // A resumed worker's first iteration is the rest of step steps - 1: the replies to its push.
  for (int64_t step = resume ? resume->steps - 1 : 0;; ++step) {
    std::vector<std::array<int64_t, 2>> headers;
    if (resume && step == resume->steps - 1) {
      const int64_t code = resumed_code(resume->code);
      headers.assign(static_cast<size_t>(servers), {resume->version, code});
      after_checkpoint(comm_, servers, code, headers);
    } else {
      comm_.reset_step();
      const PsWorkerStep s = hooks_.compute(step);
      const int64_t signal = stop_signal();
      for (int server = 0; server < servers; ++server) {
        if (!s.upload) {
          comm_.send(at::empty({0}, at::kLong), server, kPushHeaderTag);
          continue;
        }
        comm_.send(
            at::tensor({int64_t{kGradient}, step, version[static_cast<size_t>(server)], signal},
                       at::kLong),
            server, kPushHeaderTag);
        comm_.send(flatten_shard(s.grads, layout_, server), server, kPushBodyTag);
      }
      steps_ = step + 1;
      if (hooks_.after_push) hooks_.after_push(s, step);
      headers = reply_headers(comm_, servers);
      const int64_t code = headers[0][1];
      if (is_checkpoint(code)) {
        for (const auto& h : headers)
          if (h[1] != code || h[0] != headers[0][0])
            throw CommError("ps worker: the servers disagree on the checkpoint (version " +
                            std::to_string(headers[0][0]) + " code " + std::to_string(code) +
                            " against version " + std::to_string(h[0]) + " code " +
                            std::to_string(h[1]) + ")");
        if (!hooks_.checkpoint)
          throw CommError("ps worker: a checkpoint asked for, but this worker writes none");
        hooks_.checkpoint(headers[0][0], steps_, code);
        after_checkpoint(comm_, servers, code, headers);
      }
    }
    int64_t stop = kContinue;
    for (int server = 0; server < servers; ++server) {
      const auto& header = headers[static_cast<size_t>(server)];
      if (is_stop(header[1])) {
        stop = std::max(stop, header[1]);
        continue;
      }
      if (header[1] != kContinue)
        throw CommError("ps worker: reply code " + std::to_string(header[1]) + " from server " +
                        std::to_string(server));
      at::Tensor body = at::empty({layout_.shard_numel[static_cast<size_t>(server)]}, at::kFloat);
      comm_.recv(body, server, kReplyBodyTag);
      unflatten_shard(body, params_, layout_, server);
      version[static_cast<size_t>(server)] = header[0];
    }
    if (stop == kContinue) continue;
    // Posted: a server may be waiting for another server (rank 0 for a shard to evaluate), which
    // ends only once every worker has left it.
    for (int server = 0; server < servers; ++server)
      comm_.post(at::tensor({int64_t{kLeaving}, step, int64_t{0}, stop}, at::kLong), server,
                 kPushHeaderTag);
    comm_.wait_posted();
    return stop;
  }
}

}  // namespace cedar
