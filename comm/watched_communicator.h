#pragma once
// A communicator whose every blocking operation runs under a CollectiveWatchdog's deadline
// (comm/collective_watchdog.h): the run's channels (the algorithm's, under the metering layer,
// and the harness's control channel, which agrees on every step) both pass through one, so a link
// that dies hangs no operation of either for longer than the limit. Sub-communicators split from
// it are watched by the same watchdog. Forwards everything else unchanged; counts nothing.
#include <memory>
#include <string>
#include <vector>

#include "comm/collective_watchdog.h"
#include "comm/communicator.h"

namespace cedar {

class WatchedCommunicator final : public Communicator {
 public:
  WatchedCommunicator(Communicator& inner, CollectiveWatchdog& dog) : inner_(inner), dog_(dog) {}
  // Owns `inner` (a split).
  WatchedCommunicator(std::unique_ptr<Communicator> inner, CollectiveWatchdog& dog)
      : owned_(std::move(inner)), inner_(*owned_), dog_(dog) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  at::Device device() const override { return inner_.device(); }
  void allreduce_sum(at::Tensor& t) override;
  at::Tensor allgather(const at::Tensor& t) override;
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override;
  void broadcast(at::Tensor& t, int root) override;
  void barrier() override;
  void send(const at::Tensor& t, int peer, int tag = 0) override;
  void recv(at::Tensor& t, int peer, int tag = 0) override;
  int recv_any(at::Tensor& t, int tag = 0) override;
  int recv_any_up_to(at::Tensor& t, int tag, int64_t& received) override;
  void post(const at::Tensor& t, int peer, int tag) override;
  void wait_posted() override;
  void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int tag = 0) override;
  std::unique_ptr<Communicator> split(int color, int key, const std::string& level) override;

  Communicator& inner() { return inner_; }

 private:
  std::unique_ptr<Communicator> owned_;
  Communicator& inner_;
  CollectiveWatchdog& dog_;
};

}  // namespace cedar
