#include "comm/inprocess_communicator.h"

#include <ATen/ATen.h>

#include <exception>
#include <thread>

namespace cedar {

InProcessWorld::InProcessWorld(int size) : size_(size), slots_(size) {}

void InProcessWorld::wait_all(std::unique_lock<std::mutex>& lock) {
  uint64_t gen = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
  } else {
    cv_.wait(lock, [&] { return generation_ != gen; });
  }
}

void InProcessWorld::exchange(int rank, const at::Tensor& t,
                              const std::function<void(const std::vector<at::Tensor>&)>& combine) {
  std::unique_lock<std::mutex> lock(mu_);
  slots_[rank] = t;
  wait_all(lock);
  std::vector<at::Tensor> view = slots_;
  lock.unlock();
  combine(view);
  lock.lock();
  wait_all(lock);
  slots_[rank] = at::Tensor();
}

void InProcessCommunicator::allreduce_sum(at::Tensor& t) {
  at::Tensor input = t.clone();
  at::Tensor sum;
  world_.exchange(rank_, input, [&](const std::vector<at::Tensor>& all) {
    sum = all[0].clone();
    for (size_t i = 1; i < all.size(); ++i) sum.add_(all[i]);
  });
  t.copy_(sum);
}

at::Tensor InProcessCommunicator::allgather(const at::Tensor& t) {
  at::Tensor out;
  world_.exchange(rank_, t.reshape({-1}).clone(), [&](const std::vector<at::Tensor>& all) {
    for (const auto& a : all)
      if (a.numel() != t.numel()) throw CommError("allgather: ranks contributed different sizes");
    out = at::cat(all);
  });
  return out;
}

std::vector<at::Tensor> InProcessCommunicator::allgatherv(const at::Tensor& t) {
  std::vector<at::Tensor> out;
  world_.exchange(rank_, t.reshape({-1}).clone(), [&](const std::vector<at::Tensor>& all) {
    for (const auto& a : all) out.push_back(a.clone());
  });
  return out;
}

void InProcessCommunicator::broadcast(at::Tensor& t, int root) {
  at::Tensor value;
  world_.exchange(rank_, t.clone(),
                  [&](const std::vector<at::Tensor>& all) { value = all[root].clone(); });
  t.copy_(value);
}

void InProcessCommunicator::barrier() {
  world_.exchange(rank_, at::Tensor(), [](const std::vector<at::Tensor>&) {});
}

void run_ranks(int n, const std::function<void(Communicator&)>& fn) {
  InProcessWorld world(n);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      InProcessCommunicator comm(world, r);
      try {
        fn(comm);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace cedar
