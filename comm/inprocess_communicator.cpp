#include "comm/inprocess_communicator.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <exception>
#include <string>
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

void InProcessWorld::post(int from, int to, int tag, const at::Tensor& t) {
  at::Tensor copy = t.reshape({-1}).clone();
  std::lock_guard<std::mutex> lock(mu_);
  mail_[{from, to, tag}].push_back({posted_++, std::move(copy)});
  cv_.notify_all();
}

at::Tensor InProcessWorld::take(int from, int to, int tag) {
  std::unique_lock<std::mutex> lock(mu_);
  auto& queue = mail_[{from, to, tag}];
  cv_.wait(lock, [&] { return !queue.empty(); });
  at::Tensor t = std::move(queue.front().message);
  queue.pop_front();
  return t;
}

std::pair<at::Tensor, int> InProcessWorld::take_any(int to, int tag) {
  std::unique_lock<std::mutex> lock(mu_);
  std::deque<Letter>* oldest = nullptr;
  int sender = -1;
  cv_.wait(lock, [&] {
    for (int from = 0; from < size_; ++from) {
      auto it = mail_.find({from, to, tag});
      if (it == mail_.end() || it->second.empty()) continue;
      if (!oldest || it->second.front().posted < oldest->front().posted) {
        oldest = &it->second;
        sender = from;
      }
    }
    return oldest != nullptr;
  });
  at::Tensor t = std::move(oldest->front().message);
  oldest->pop_front();
  return {std::move(t), sender};
}

std::shared_ptr<InProcessWorld> InProcessWorld::part(uint64_t split, int color, int members) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& world = parts_[{split, color}];
  if (!world) world = std::make_shared<InProcessWorld>(members);
  return world;
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

namespace {

void check_peer(int peer, int size, const char* op) {
  if (peer < 0 || peer >= size)
    throw CommError(std::string("inproc ") + op + ": rank " + std::to_string(peer) +
                    " is outside this communicator of " + std::to_string(size) + " ranks");
}

void deliver(const at::Tensor& message, at::Tensor& t, int peer, const char* op) {
  if (message.numel() != t.numel() || message.scalar_type() != t.scalar_type())
    throw CommError(std::string("inproc ") + op + ": expected " + std::to_string(t.numel()) + " " +
                    std::string(c10::toString(t.scalar_type())) + " values from rank " +
                    std::to_string(peer) + ", received " + std::to_string(message.numel()) + " " +
                    std::string(c10::toString(message.scalar_type())));
  t.copy_(message.reshape(t.sizes()));
}

}  // namespace

void InProcessCommunicator::send(const at::Tensor& t, int peer, int tag) {
  check_peer(peer, size(), "send");
  world_.post(rank_, peer, tag, t);
}

void InProcessCommunicator::recv(at::Tensor& t, int peer, int tag) {
  check_peer(peer, size(), "recv");
  deliver(world_.take(peer, rank_, tag), t, peer, "recv");
}

int InProcessCommunicator::recv_any(at::Tensor& t, int tag) {
  auto [message, sender] = world_.take_any(rank_, tag);
  deliver(message, t, sender, "recv_any");
  return sender;
}

int InProcessCommunicator::recv_any_up_to(at::Tensor& t, int tag, int64_t& received) {
  auto [message, sender] = world_.take_any(rank_, tag);
  if (message.numel() > t.numel() || message.scalar_type() != t.scalar_type())
    throw CommError("inproc recv_any_up_to: expected at most " + std::to_string(t.numel()) + " " +
                    std::string(c10::toString(t.scalar_type())) + " values from rank " +
                    std::to_string(sender) + ", received " + std::to_string(message.numel()) + " " +
                    std::string(c10::toString(message.scalar_type())));
  received = message.numel();
  if (received > 0) t.reshape({-1}).narrow(0, 0, received).copy_(message.reshape({-1}));
  return sender;
}

void InProcessCommunicator::sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source,
                                     int tag) {
  check_peer(dest, size(), "sendrecv");
  check_peer(source, size(), "sendrecv");
  world_.post(rank_, dest, tag, out);
  deliver(world_.take(source, rank_, tag), in, source, "sendrecv");
}

std::unique_ptr<Communicator> InProcessCommunicator::split(int color, int key, const std::string&) {
  at::Tensor mine = at::tensor({int64_t{color}, int64_t{key}}, at::kLong);
  std::vector<std::array<int64_t, 3>> all;  // (color, key, rank) of every rank
  world_.exchange(rank_, mine, [&](const std::vector<at::Tensor>& deposits) {
    for (size_t r = 0; r < deposits.size(); ++r) {
      const int64_t* v = deposits[r].data_ptr<int64_t>();
      all.push_back({v[0], v[1], static_cast<int64_t>(r)});
    }
  });
  std::vector<std::array<int64_t, 3>> group;
  for (const auto& e : all)
    if (e[0] == color) group.push_back(e);
  std::sort(group.begin(), group.end(),
            [](const auto& a, const auto& b) { return a[1] != b[1] ? a[1] < b[1] : a[2] < b[2]; });
  int new_rank = 0;
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i][2] == rank_) new_rank = static_cast<int>(i);
  auto world = world_.part(splits_++, color, static_cast<int>(group.size()));
  return std::make_unique<InProcessCommunicator>(std::move(world), new_rank);
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
