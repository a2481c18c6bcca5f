#pragma once
// The one path through which every byte leaves a rank. Algorithms receive a Communicator (in
// practice the MeteredCommunicator wrapping a backend) and never talk to MPI or NCCL directly.
#include <ATen/core/Tensor.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cedar {

class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;
  // Where tensors handed to this communicator must live (NCCL: its CUDA device).
  virtual at::Device device() const { return at::Device(at::kCPU); }

  // In-place elementwise sum over ranks of a contiguous tensor (same shape/dtype on every rank).
  virtual void allreduce_sum(at::Tensor& t) = 0;
  // Every rank contributes a tensor of the same numel/dtype; returns a 1-D tensor of size()*numel
  // with rank i's elements at [i*numel, (i+1)*numel).
  virtual at::Tensor allgather(const at::Tensor& t) = 0;
  // Ranks contribute 1-D tensors of any length (0 allowed); returns one tensor per rank.
  // Costs one extra allgather of an 8-byte count per rank, which the metering layer counts.
  virtual std::vector<at::Tensor> allgatherv(const at::Tensor& t) = 0;
  // In-place broadcast from `root`.
  virtual void broadcast(at::Tensor& t, int root) = 0;
  virtual void barrier() = 0;

  // Point-to-point. `t` must be contiguous; a receive names the exact count and type the peer
  // sends (a mismatch is a CommError). Messages between one pair with one tag arrive in order.
  // send may return before the peer receives (buffered) or only once it does: a caller that
  // sends and receives at once uses sendrecv, which never deadlocks on a ring or a pairing.
  virtual void send(const at::Tensor& t, int peer, int tag = 0) = 0;
  virtual void recv(at::Tensor& t, int peer, int tag = 0) = 0;
  // Receives the next message with `tag` from whichever rank sends one first and returns that
  // rank. Like recv, `t` names the exact count and type; the messages one sender sends with one
  // tag arrive in order. A parameter server serves its workers in the order they arrive this way.
  virtual int recv_any(at::Tensor& t, int tag = 0) = 0;
  // As recv_any, but the message may hold fewer elements of t's type than t (none at all: an
  // empty message, which carries no bytes): they fill t's first elements, and `received` says how
  // many arrived. Backends without a receive from any rank throw.
  virtual int recv_any_up_to(at::Tensor& t, int tag, int64_t& received) {
    (void)t, (void)tag, (void)received;
    throw CommError("backend " + backend() + " does not support recv_any_up_to");
  }
  // A send that never waits for its receiver: it returns at once, and the message arrives in
  // order with this rank's other messages to `peer` with `tag`. The communicator holds on to `t`
  // itself (not a copy) until the message is delivered, so the caller hands over a tensor it will
  // not write again. wait_posted() returns once every posted message has been received. For a
  // rank that must go on receiving while its replies wait for their receivers: a parameter server
  // answering workers that may be busy with another server. Backends without it throw.
  virtual void post(const at::Tensor& t, int peer, int tag) {
    (void)t, (void)peer, (void)tag;
    throw CommError("backend " + backend() + " does not support post (a non-blocking send)");
  }
  virtual void wait_posted() {}
  // Sends `out` to `dest` and receives into `in` from `source`, both at once. dest == source ==
  // rank() copies `out` into `in`.
  virtual void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source,
                        int tag = 0) = 0;

  // Collective over this communicator: the ranks passing the same `color` form a new
  // communicator, ranked by (key, rank here). `level` names the new communicator's traffic
  // ("intra", "inter"): the metering layer counts it under that name and emulates it with that
  // level's network profile; backends ignore it.
  virtual std::unique_ptr<Communicator> split(int color, int key, const std::string& level) = 0;
};

// One process, no peers: every collective is the identity.
class LocalCommunicator final : public Communicator {
 public:
  // `device`: where the run keeps the tensors it hands over (the identity works on any).
  explicit LocalCommunicator(at::Device device = at::Device(at::kCPU)) : device_(device) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "local"; }
  at::Device device() const override { return device_; }
  void allreduce_sum(at::Tensor&) override {}
  at::Tensor allgather(const at::Tensor& t) override;
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override;
  void broadcast(at::Tensor&, int) override {}
  void barrier() override {}
  void send(const at::Tensor& t, int peer, int tag) override;
  void recv(at::Tensor& t, int peer, int tag) override;
  int recv_any(at::Tensor& t, int tag) override;
  void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int tag) override;
  std::unique_ptr<Communicator> split(int color, int key, const std::string& level) override;

 private:
  // The result of allgather and allgatherv: a copy of t, flattened; from 1 MiB on in one kept
  // storage, reused once every view of the previous result is gone (as MpiCommunicator's).
  at::Tensor copy_of(const at::Tensor& t);
  at::Device device_;
  at::Tensor gather_storage_;  // uint8, the reusable output storage
};

}  // namespace cedar
