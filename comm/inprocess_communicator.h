#pragma once
// n ranks as n threads of one process, for tests: the same collectives with the same semantics
// as the MPI backend, computed through shared memory.
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "comm/communicator.h"

namespace cedar {

class InProcessWorld {
 public:
  explicit InProcessWorld(int size);
  int size() const { return size_; }

  // Rank `rank` deposits `t`, waits for all, runs `combine` on every deposit (rank order), waits
  // again so no deposit is released while another rank still reads it.
  void exchange(int rank, const at::Tensor& t,
                const std::function<void(const std::vector<at::Tensor>&)>& combine);

  // Point-to-point: post queues a copy of `t` for (from, to, tag) and returns; take waits for
  // the oldest such message.
  void post(int from, int to, int tag, const at::Tensor& t);
  at::Tensor take(int from, int to, int tag);
  // Waits for the oldest message to `to` with `tag` from any rank; returns it and its sender.
  std::pair<at::Tensor, int> take_any(int to, int tag);

  // The world of the ranks in `members` (in their new rank order) for the split numbered
  // `split` with color `color`: made by the first member to ask, shared by the others.
  std::shared_ptr<InProcessWorld> part(uint64_t split, int color, int members);

 private:
  void wait_all(std::unique_lock<std::mutex>& lock);
  int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<at::Tensor> slots_;
  struct Letter {
    uint64_t posted;  // the order of posting over the whole world
    at::Tensor message;
  };
  std::map<std::tuple<int, int, int>, std::deque<Letter>> mail_;
  uint64_t posted_ = 0;
  std::map<std::pair<uint64_t, int>, std::shared_ptr<InProcessWorld>> parts_;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(InProcessWorld& world, int rank) : world_(world), rank_(rank) {}
  // A communicator of a split world, which it keeps alive.
  InProcessCommunicator(std::shared_ptr<InProcessWorld> world, int rank)
      : owned_(std::move(world)), world_(*owned_), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  std::string backend() const override { return "inproc"; }
  void allreduce_sum(at::Tensor& t) override;
  at::Tensor allgather(const at::Tensor& t) override;
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override;
  void broadcast(at::Tensor& t, int root) override;
  void barrier() override;
  void send(const at::Tensor& t, int peer, int tag) override;
  // Messages are queued on sending, so a post is a send.
  void post(const at::Tensor& t, int peer, int tag) override { send(t, peer, tag); }
  void recv(at::Tensor& t, int peer, int tag) override;
  int recv_any(at::Tensor& t, int tag) override;
  int recv_any_up_to(at::Tensor& t, int tag, int64_t& received) override;
  void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int tag) override;
  std::unique_ptr<Communicator> split(int color, int key, const std::string& level) override;

 private:
  std::shared_ptr<InProcessWorld> owned_;
  InProcessWorld& world_;
  int rank_;
  uint64_t splits_ = 0;  // how many splits this rank has made (the same on every rank)
};

// Runs fn(comm) on n threads, one InProcessCommunicator each; rethrows the first exception.
void run_ranks(int n, const std::function<void(Communicator&)>& fn);

}  // namespace cedar
