#include <ATen/ATen.h>

#include <string>

#include "comm/communicator.h"

namespace cedar {

at::Tensor LocalCommunicator::copy_of(const at::Tensor& t) {
  // A fresh large output costs a page fault per 4 KiB on every call; the storage of the previous
  // one is reused once nothing but this communicator holds it.
  constexpr int64_t kReuseFromBytes = int64_t{1} << 20;
  at::Tensor flat = t.reshape({-1});
  const int64_t bytes = flat.numel() * static_cast<int64_t>(flat.element_size());
  if (bytes < kReuseFromBytes || !flat.device().is_cpu()) return flat.clone();
  const bool free = gather_storage_.defined() && gather_storage_.storage().use_count() == 1;
  if (!free || gather_storage_.numel() < bytes)
    gather_storage_ = at::empty({bytes}, at::TensorOptions().dtype(at::kByte));
  at::Tensor out = gather_storage_.narrow(0, 0, bytes).view(flat.scalar_type());
  out.copy_(flat);
  return out;
}

at::Tensor LocalCommunicator::allgather(const at::Tensor& t) { return copy_of(t); }

std::vector<at::Tensor> LocalCommunicator::allgatherv(const at::Tensor& t) { return {copy_of(t)}; }

namespace {
void no_peer(const char* op, int peer) {
  throw CommError(std::string("backend local: ") + op + " with rank " + std::to_string(peer) +
                  ", but the only rank is 0 (a one-process run has no peers)");
}
}  // namespace

void LocalCommunicator::send(const at::Tensor&, int peer, int) { no_peer("send", peer); }

void LocalCommunicator::recv(at::Tensor&, int peer, int) { no_peer("recv", peer); }

int LocalCommunicator::recv_any(at::Tensor&, int) {
  throw CommError("backend local: recv_any, but a one-process run has no peers to receive from");
}

void LocalCommunicator::sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int) {
  if (dest != 0) no_peer("sendrecv", dest);
  if (source != 0) no_peer("sendrecv", source);
  if (out.numel() != in.numel() || out.scalar_type() != in.scalar_type())
    throw CommError("backend local: sendrecv to itself with different counts or types");
  in.copy_(out.reshape(in.sizes()));
}

std::unique_ptr<Communicator> LocalCommunicator::split(int, int, const std::string&) {
  return std::make_unique<LocalCommunicator>(device_);
}

}  // namespace cedar
