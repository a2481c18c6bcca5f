// The MPI communicator's point-to-point messages (comm/mpi_communicator.h): send, post and its
// completion, recv (from one rank, or the next sender), sendrecv.
#include <ATen/ATen.h>
#include <mpi.h>

#include <string>

#include "comm/mpi_communicator.h"
#include "comm/mpi_detail.h"

namespace cedar {

using namespace mpi_detail;

namespace {

int checked_peer(int peer, int size, const char* op) {
  if (peer < 0 || peer >= size)
    throw CommError(std::string("mpi ") + op + ": rank " + std::to_string(peer) +
                    " is outside this communicator of " + std::to_string(size) + " ranks");
  return peer;
}

int64_t byte_count(const at::Tensor& t) {
  return t.numel() * static_cast<int64_t>(t.element_size());
}

void check_received(const MPI_Status& status, int64_t expected, const char* op) {
  int got = 0;
  MPI_Get_count(&status, MPI_BYTE, &got);
  if (got != expected)
    throw CommError(std::string("mpi ") + op + ": expected " + std::to_string(expected) +
                    " bytes from rank " + std::to_string(status.MPI_SOURCE) + ", received " +
                    std::to_string(got));
}

}  // namespace

void MpiCommunicator::send(const at::Tensor& t, int peer, int tag) {
  check_tensor(t, "send");
  const at::Tensor buffer = readable(t, HostStaging::kInput);
  check(MPI_Send(buffer.data_ptr(), count_of(byte_count(t), "send"), MPI_BYTE,
                 checked_peer(peer, size_, "send"), tag, as_comm(comm_)),
        "Send");
}

void MpiCommunicator::post(const at::Tensor& t, int peer, int tag) {
  check_tensor(t, "post");
  reap_posted();
  auto sent = std::make_unique<PostedSend>();
  // A host copy of a device tensor, as the staged send: the staging buffers are reused by the
  // next call, so a posted send takes a copy of its own.
  sent->data = t.is_cuda() ? t.to(at::kCPU) : t;
  check(MPI_Isend(sent->data.data_ptr(), count_of(byte_count(t), "post"), MPI_BYTE,
                  checked_peer(peer, size_, "post"), tag, as_comm(comm_), &sent->request),
        "Isend");
  posted_.push_back(std::move(sent));
}

void MpiCommunicator::reap_posted() {
  auto done = [](PostedSend& p) {
    int complete = 0;
    check(MPI_Test(&p.request, &complete, MPI_STATUS_IGNORE), "Test");
    return complete != 0;
  };
  posted_.erase(std::remove_if(posted_.begin(), posted_.end(),
                               [&](const std::unique_ptr<PostedSend>& p) { return done(*p); }),
                posted_.end());
}

void MpiCommunicator::wait_posted() {
  if (idle_wait_) {
    sleep_until([&] {
      reap_posted();
      return posted_.empty();
    });
    return;
  }
  for (auto& p : posted_) check(MPI_Wait(&p->request, MPI_STATUS_IGNORE), "Wait");
  posted_.clear();
}

void MpiCommunicator::recv(at::Tensor& t, int peer, int tag) {
  check_tensor(t, "recv");
  MPI_Status status;
  // One byte of room beyond the expected count, so that a longer message is reported as such
  // (MPI_Get_count) instead of as MPI's truncation error.
  const int64_t bytes = byte_count(t);
  at::Tensor room = staging_.room(bytes + 1, at::kByte, HostStaging::kOutput, t.device());
  if (idle_wait_) sleep_until_message(as_comm(comm_), checked_peer(peer, size_, "recv"), tag);
  check(MPI_Recv(room.data_ptr(), count_of(bytes + 1, "recv"), MPI_BYTE,
                 checked_peer(peer, size_, "recv"), tag, as_comm(comm_), &status),
        "Recv");
  check_received(status, bytes, "recv");
  HostStaging::copy_out(room.narrow(0, 0, bytes).view(t.scalar_type()), t);
}

int MpiCommunicator::recv_any(at::Tensor& t, int tag) {
  int64_t received = 0;
  return receive_any(t, tag, "recv_any", /*exact=*/true, received);
}

int MpiCommunicator::recv_any_up_to(at::Tensor& t, int tag, int64_t& received) {
  return receive_any(t, tag, "recv_any_up_to", /*exact=*/false, received);
}

int MpiCommunicator::receive_any(at::Tensor& t, int tag, const char* op, bool exact,
                                 int64_t& received) {
  check_tensor(t, op);
  MPI_Status status;
  const int64_t bytes = byte_count(t);
  at::Tensor room = staging_.room(bytes + 1, at::kByte, HostStaging::kOutput, t.device());
  const int source = next_sender(tag);
  check(MPI_Recv(room.data_ptr(), count_of(bytes + 1, op), MPI_BYTE, source, tag, as_comm(comm_),
                 &status),
        "Recv");
  if (exact) {
    check_received(status, bytes, op);
    received = t.numel();
    HostStaging::copy_out(room.narrow(0, 0, bytes).view(t.scalar_type()), t);
    return status.MPI_SOURCE;
  }
  int got = 0;
  MPI_Get_count(&status, MPI_BYTE, &got);
  const int64_t element = static_cast<int64_t>(t.element_size());
  if (got > bytes || got % element != 0)
    throw CommError(std::string("mpi ") + op + ": expected at most " + std::to_string(bytes) +
                    " bytes in whole elements of " + std::to_string(element) + " from rank " +
                    std::to_string(status.MPI_SOURCE) + ", received " + std::to_string(got));
  received = got / element;
  at::Tensor arrived = t.view({-1}).narrow(0, 0, received);
  HostStaging::copy_out(room.narrow(0, 0, got).view(t.scalar_type()), arrived);
  return status.MPI_SOURCE;
}

void MpiCommunicator::sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source,
                               int tag) {
  check_tensor(out, "sendrecv");
  check_tensor(in, "sendrecv");
  MPI_Status status;
  const int64_t bytes = byte_count(in);
  const at::Tensor sent = readable(out, HostStaging::kInput);
  const at::Tensor received = writable(in, HostStaging::kOutput);
  check(MPI_Sendrecv(sent.data_ptr(), count_of(byte_count(out), "sendrecv"), MPI_BYTE,
                     checked_peer(dest, size_, "sendrecv"), tag, received.data_ptr(),
                     count_of(bytes, "sendrecv"), MPI_BYTE, checked_peer(source, size_, "sendrecv"),
                     tag, as_comm(comm_), &status),
        "Sendrecv");
  check_received(status, bytes, "sendrecv");
  copy_back(received, in);
}

}  // namespace cedar
