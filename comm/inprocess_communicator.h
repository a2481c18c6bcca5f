#pragma once
// n ranks as n threads of one process, for tests: the same collectives with the same semantics
// as the MPI backend, computed through shared memory.
#include <condition_variable>
#include <functional>
#include <mutex>

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

 private:
  void wait_all(std::unique_lock<std::mutex>& lock);
  int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<at::Tensor> slots_;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(InProcessWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  std::string backend() const override { return "inproc"; }
  void allreduce_sum(at::Tensor& t) override;
  at::Tensor allgather(const at::Tensor& t) override;
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override;
  void broadcast(at::Tensor& t, int root) override;
  void barrier() override;

 private:
  InProcessWorld& world_;
  int rank_;
};

// Runs fn(comm) on n threads, one InProcessCommunicator each; rethrows the first exception.
void run_ranks(int n, const std::function<void(Communicator&)>& fn);

}  // namespace cedar
