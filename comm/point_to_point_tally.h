#pragma once
// The links an allreduce scheme (comm/allreduce_algorithms.h) runs over inside the metering
// layer: forwards send, recv and sendrecv to a backend and counts what this rank sends: each
// send or sendrecv one message (one latency step, an empty one included) of its bytes. With a
// profile, each message lasts at least its modeled time, as the metering layer's own
// point-to-point operations do (a send alpha + beta * its bytes, a receive of what it received,
// a sendrecv of the larger side), so a scheme's emulated time follows its own critical path.
// Collectives and receives from any rank are not links: they throw CommError.
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/network_model.h"

namespace cedar {

class PointToPointTally final : public Communicator {
 public:
  // `emulate`: the profile each message is emulated on (nullptr: none).
  PointToPointTally(Communicator& inner, const NetworkProfile* emulate)
      : inner_(inner), emulate_(emulate) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  at::Device device() const override { return inner_.device(); }
  void send(const at::Tensor& t, int peer, int tag = 0) override;
  void recv(at::Tensor& t, int peer, int tag = 0) override;
  void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int tag = 0) override;

  void allreduce_sum(at::Tensor&) override { not_a_link("allreduce"); }
  at::Tensor allgather(const at::Tensor&) override { not_a_link("allgather"); }
  std::vector<at::Tensor> allgatherv(const at::Tensor&) override { not_a_link("allgatherv"); }
  void broadcast(at::Tensor&, int) override { not_a_link("broadcast"); }
  void barrier() override { not_a_link("barrier"); }
  int recv_any(at::Tensor&, int) override { not_a_link("recv_any"); }
  std::unique_ptr<Communicator> split(int, int, const std::string&) override {
    not_a_link("split");
  }

  int64_t messages() const { return messages_; }      // sends and sendrecvs
  int64_t bytes_sent() const { return bytes_sent_; }  // their outgoing bytes
  double seconds() const { return seconds_; }         // inside them, emulated time included

 private:
  [[noreturn]] void not_a_link(const char* op) const;
  double clock() const;
  // Sleeps until the message that began at `t0` has lasted its modeled time; adds its seconds.
  void finish(double t0, int64_t bytes);

  Communicator& inner_;
  const NetworkProfile* emulate_;
  int64_t messages_ = 0, bytes_sent_ = 0;
  double seconds_ = 0;
};

}  // namespace cedar
