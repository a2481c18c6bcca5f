#pragma once
// How the shards of servers 1..S-1 reach rank 0 for its evaluations (runner/ps/run.h).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "runner/ps/checkpoint.h"
#include "runner/ps/lag_rule.h"
#include "runner/ps/layout.h"
#include "runner/ps/protocol.h"
#include "runner/ps/run.h"
#include "runner/ps/server.h"
#include "runner/ps/worker.h"
#include "runner/train/checkpoint_state.h"
#include "runner/train/evaluator.h"
#include "runner/train/hold_for_signal.h"
#include "runner/train/log.h"
#include "runner/train/lr_schedule.h"
#include "runner/train/trainer.h"

namespace cedar {

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

}  // namespace cedar
