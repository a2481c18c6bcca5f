#include "runner/train/ps_worker.h"

#include <ATen/ATen.h>

#include "runner/train/ps_protocol.h"

namespace cedar {

int64_t PsWorker::run() {
  std::vector<int64_t> version(static_cast<size_t>(layout_.servers), 0);
  for (int64_t step = 0;; ++step) {
    comm_.reset_step();
    const PsWorkerStep s = hooks_.compute(step);
    for (int server = 0; server < layout_.servers; ++server) {
      const int64_t kind = s.upload ? kGradient : kSkipped;
      comm_.send(
          at::tensor({kind, step, version[static_cast<size_t>(server)], int64_t{0}}, at::kLong),
          server, kPushHeaderTag);
      if (s.upload) comm_.send(flatten_shard(s.grads, layout_, server), server, kPushBodyTag);
    }
    if (hooks_.after_push) hooks_.after_push(s, step);
    bool stop = false;
    for (int server = 0; server < layout_.servers; ++server) {
      at::Tensor header = at::empty({kReplyHeaderWords}, at::kLong);
      comm_.recv(header, server, kReplyHeaderTag);
      if (header[1].item<int64_t>() != 0) {
        stop = true;
        continue;
      }
      at::Tensor body = at::empty({layout_.shard_numel[static_cast<size_t>(server)]}, at::kFloat);
      comm_.recv(body, server, kReplyBodyTag);
      unflatten_shard(body, params_, layout_, server);
      version[static_cast<size_t>(server)] = header[0].item<int64_t>();
    }
    if (!stop) continue;
    for (int server = 0; server < layout_.servers; ++server)
      comm_.send(at::tensor({int64_t{kLeaving}, step, int64_t{0}, int64_t{0}}, at::kLong), server,
                 kPushHeaderTag);
    return step + 1;
  }
}

}  // namespace cedar
