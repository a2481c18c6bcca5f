#include "comm/watched_communicator.h"

namespace cedar {
namespace {

int64_t nbytes(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

}  // namespace

using Watch = CollectiveWatchdog::Watch;

void WatchedCommunicator::allreduce_sum(at::Tensor& t) {
  Watch w(&dog_, "allreduce", nbytes(t), -1);
  inner_.allreduce_sum(t);
}

at::Tensor WatchedCommunicator::allgather(const at::Tensor& t) {
  Watch w(&dog_, "allgather", nbytes(t), -1);
  return inner_.allgather(t);
}

std::vector<at::Tensor> WatchedCommunicator::allgatherv(const at::Tensor& t) {
  Watch w(&dog_, "allgatherv", nbytes(t), -1);
  return inner_.allgatherv(t);
}

void WatchedCommunicator::broadcast(at::Tensor& t, int root) {
  Watch w(&dog_, "broadcast", nbytes(t), -1);
  inner_.broadcast(t, root);
}

void WatchedCommunicator::barrier() {
  Watch w(&dog_, "barrier", 0, -1);
  inner_.barrier();
}

void WatchedCommunicator::send(const at::Tensor& t, int peer, int tag) {
  Watch w(&dog_, "send", nbytes(t), peer);
  inner_.send(t, peer, tag);
}

void WatchedCommunicator::recv(at::Tensor& t, int peer, int tag) {
  Watch w(&dog_, "recv", nbytes(t), peer);
  inner_.recv(t, peer, tag);
}

int WatchedCommunicator::recv_any(at::Tensor& t, int tag) {
  Watch w(&dog_, "recv_any", nbytes(t), -1);
  return inner_.recv_any(t, tag);
}

int WatchedCommunicator::recv_any_up_to(at::Tensor& t, int tag, int64_t& received) {
  Watch w(&dog_, "recv_any", nbytes(t), -1);
  return inner_.recv_any_up_to(t, tag, received);
}

// Returns at once by definition: nothing to watch. Its delivery is watched in wait_posted.
void WatchedCommunicator::post(const at::Tensor& t, int peer, int tag) {
  inner_.post(t, peer, tag);
}

void WatchedCommunicator::wait_posted() {
  Watch w(&dog_, "wait for posted sends", 0, -1);
  inner_.wait_posted();
}

void WatchedCommunicator::sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source,
                                   int tag) {
  Watch w(&dog_, "sendrecv", nbytes(out), dest);
  inner_.sendrecv(out, dest, in, source, tag);
}

std::unique_ptr<Communicator> WatchedCommunicator::split(int color, int key,
                                                         const std::string& level) {
  std::unique_ptr<Communicator> part;
  {
    Watch w(&dog_, "split", 8, -1);
    part = inner_.split(color, key, level);
  }
  return std::make_unique<WatchedCommunicator>(std::move(part), dog_);
}

}  // namespace cedar
