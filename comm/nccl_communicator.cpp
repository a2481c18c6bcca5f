#include "comm/nccl_communicator.h"

#include <ATen/ATen.h>

#include <cstring>
#include <string>

#ifdef CEDAR_HAVE_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <nccl.h>
#endif

namespace cedar {

#ifdef CEDAR_HAVE_NCCL
namespace {

void check(ncclResult_t rc, const char* op) {
  if (rc != ncclSuccess)
    throw CommError(std::string("nccl ") + op + " failed: " + ncclGetErrorString(rc));
}

ncclDataType_t nccl_type(const at::Tensor& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
    case at::kByte: return ncclUint8;
    case at::kChar: return ncclInt8;
    default:
      throw CommError(std::string("backend nccl does not support ") + op + " of " +
                      std::string(c10::toString(t.scalar_type())) + " tensors");
  }
}

void check_cuda(const at::Tensor& t, const char* op) {
  if (!t.is_cuda())
    throw CommError(std::string("backend nccl does not support ") + op + " of " + t.device().str() +
                    " tensors (use the mpi backend for CPU tensors)");
  if (!t.is_contiguous())
    throw CommError(std::string("nccl ") + op + ": tensor must be contiguous");
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Communicator& bootstrap, int device)
      : rank_(bootstrap.rank()), size_(bootstrap.size()), device_(device) {
    ncclUniqueId id;
    if (rank_ == 0) check(ncclGetUniqueId(&id), "GetUniqueId");
    at::Tensor buf = at::empty({static_cast<int64_t>(sizeof id)}, at::kByte);
    if (rank_ == 0) std::memcpy(buf.data_ptr(), &id, sizeof id);
    bootstrap.broadcast(buf, 0);
    std::memcpy(&id, buf.data_ptr(), sizeof id);
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    check(ncclCommInitRank(&comm_, size_, id, rank_), "CommInitRank");
  }
  // A communicator split from another (ncclCommSplit).
  NcclCommunicator(ncclComm_t comm, int device) : device_(device), comm_(comm) {
    check(ncclCommUserRank(comm_, &rank_), "CommUserRank");
    check(ncclCommCount(comm_, &size_), "CommCount");
  }
  ~NcclCommunicator() override {
    if (comm_) ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  at::Device device() const override {
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_));
  }

  void allreduce_sum(at::Tensor& t) override {
    check_cuda(t, "allreduce");
    check(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t, "allreduce"), ncclSum,
                        comm_, stream(t)),
          "AllReduce");
  }

  at::Tensor allgather(const at::Tensor& t) override {
    check_cuda(t, "allgather");
    at::Tensor out = at::empty({t.numel() * size_}, t.options());
    check(ncclAllGather(t.data_ptr(), out.data_ptr(), t.numel(), nccl_type(t, "allgather"), comm_,
                        stream(t)),
          "AllGather");
    return out;
  }

  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override {
    check_cuda(t, "allgatherv");
    at::Tensor count = at::full({1}, t.numel(), t.options().dtype(at::kLong));
    at::Tensor counts = allgather(count).cpu();
    const int64_t* c = counts.data_ptr<int64_t>();
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) total += c[r];
    at::Tensor flat = at::empty({total}, t.options());
    // allgatherv as one broadcast per root inside a group.
    check(ncclGroupStart(), "GroupStart");
    int64_t off = 0;
    for (int r = 0; r < size_; ++r) {
      void* dst = static_cast<char*>(flat.data_ptr()) + off * t.element_size();
      const void* src = r == rank_ ? t.data_ptr() : dst;
      check(ncclBroadcast(src, dst, c[r], nccl_type(t, "allgatherv"), r, comm_, stream(t)),
            "Broadcast");
      off += c[r];
    }
    check(ncclGroupEnd(), "GroupEnd");
    std::vector<at::Tensor> out;
    off = 0;
    for (int r = 0; r < size_; ++r) {
      out.push_back(flat.narrow(0, off, c[r]));
      off += c[r];
    }
    return out;
  }

  void broadcast(at::Tensor& t, int root) override {
    check_cuda(t, "broadcast");
    check(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t, "broadcast"), root,
                        comm_, stream(t)),
          "Broadcast");
  }

  void send(const at::Tensor& t, int peer, int tag) override {
    check_cuda(t, "send");
    check_peer(peer, "send");
    (void)tag;  // NCCL orders the messages of one pair by issue order; it has no tags
    check(ncclSend(t.data_ptr(), t.numel(), nccl_type(t, "send"), peer, comm_, stream(t)), "Send");
  }

  void recv(at::Tensor& t, int peer, int tag) override {
    check_cuda(t, "recv");
    check_peer(peer, "recv");
    (void)tag;
    check(ncclRecv(t.data_ptr(), t.numel(), nccl_type(t, "recv"), peer, comm_, stream(t)), "Recv");
  }

  int recv_any(at::Tensor&, int) override {
    throw CommError(
        "backend nccl does not support recv_any (NCCL has no receive from any rank); "
        "the parameter server runs on backend mpi");
  }

  void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int tag) override {
    check_cuda(out, "sendrecv");
    check_cuda(in, "sendrecv");
    check_peer(dest, "sendrecv");
    check_peer(source, "sendrecv");
    (void)tag;
    check(ncclGroupStart(), "GroupStart");
    check(
        ncclSend(out.data_ptr(), out.numel(), nccl_type(out, "sendrecv"), dest, comm_, stream(out)),
        "Send");
    check(ncclRecv(in.data_ptr(), in.numel(), nccl_type(in, "sendrecv"), source, comm_, stream(in)),
          "Recv");
    check(ncclGroupEnd(), "GroupEnd");
  }

  std::unique_ptr<Communicator> split(int color, int key, const std::string&) override {
    ncclComm_t part = nullptr;
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    check(ncclCommSplit(comm_, color, key, &part, nullptr), "CommSplit");
    return std::make_unique<NcclCommunicator>(part, device_);
  }

  void barrier() override {
    at::Tensor one = at::ones({1}, at::TensorOptions().device(at::kCUDA, device_));
    allreduce_sum(one);
    c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).synchronize();
  }

 private:
  void check_peer(int peer, const char* op) const {
    if (peer < 0 || peer >= size_)
      throw CommError(std::string("nccl ") + op + ": rank " + std::to_string(peer) +
                      " is outside this communicator of " + std::to_string(size_) + " ranks");
  }
  static cudaStream_t stream(const at::Tensor& t) {
    return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
  }
  int rank_ = 0, size_ = 1, device_ = 0;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool nccl_available() { return c10::cuda::device_count() > 0; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device) {
  if (!nccl_available()) throw CommError("backend nccl: no CUDA device is visible");
  return std::make_unique<NcclCommunicator>(bootstrap, device);
}

#else

bool nccl_available() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, int) {
  throw CommError(
      "backend nccl is not compiled into this build (LibTorch without CUDA or no NCCL)");
}

#endif

}  // namespace cedar
