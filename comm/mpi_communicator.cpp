#include "comm/mpi_communicator.h"

#include <ATen/ATen.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Query_cuda_support
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "comm/device_stream.h"

namespace cedar {
namespace {

MPI_Datatype mpi_type(const at::Tensor& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat: return MPI_FLOAT;
    case at::kDouble: return MPI_DOUBLE;
    case at::kInt: return MPI_INT32_T;
    case at::kLong: return MPI_INT64_T;
    case at::kByte: return MPI_UINT8_T;
    case at::kChar: return MPI_INT8_T;
    default:
      throw CommError(std::string("backend mpi does not support ") + op + " of " +
                      std::string(c10::toString(t.scalar_type())) + " tensors");
  }
}

void check_tensor(const at::Tensor& t, const char* op) {
  if (!t.device().is_cpu() && !t.device().is_cuda())
    throw CommError(std::string("backend mpi does not support ") + op + " of " + t.device().str() +
                    " tensors (CPU and CUDA tensors only)");
  if (!t.is_contiguous()) throw CommError(std::string("mpi ") + op + ": tensor must be contiguous");
}

int count_of(int64_t n, const char* op) {
  if (n > std::numeric_limits<int>::max())
    throw CommError(std::string("mpi ") + op + ": more than 2^31-1 elements in one call");
  return static_cast<int>(n);
}

void check(int rc, const char* op) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw CommError(std::string("MPI_") + op + " failed: " + std::string(msg, len));
  }
}

MPI_Comm as_comm(void* comm) { return *static_cast<MPI_Comm*>(comm); }

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool launched_under_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") ||
         std::getenv("PMI_RANK") || std::getenv("MPI_LOCALNRANKS");
}

static int g_thread_level = -1;  // what MPI_Init_thread provided

void ensure_mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  // Serialized: the overlap of communication with backward calls MPI from one communication
  // thread while the main thread waits (never two threads at once).
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  g_thread_level = provided;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit(finalize_at_exit);
}

bool mpi_threads_serialized() { return g_thread_level >= MPI_THREAD_SERIALIZED; }

bool mpi_cuda_aware() {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  static const bool aware = MPIX_Query_cuda_support() == 1;
  return aware;
#else
  return false;
#endif
}

struct MpiCommunicator::PostedSend {
  MPI_Request request = MPI_REQUEST_NULL;
  at::Tensor data;  // what MPI reads until the send completes
};

MpiCommunicator::MpiCommunicator() {
  ensure_mpi_initialized();
  comm_ = new MPI_Comm(MPI_COMM_WORLD);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiCommunicator::MpiCommunicator(void* comm) : comm_(comm), owned_(true) {
  MPI_Comm c = *static_cast<MPI_Comm*>(comm_);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c, &rank_);
  MPI_Comm_size(c, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  auto* c = static_cast<MPI_Comm*>(comm_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(c);
  delete c;
}

namespace {

// Calls `ready` until it returns true, sleeping between calls for pauses that grow from 20 to
// 500 us: how an idle-waiting rank waits without spinning.
template <class Ready>
void sleep_until(Ready ready) {
  std::chrono::microseconds pause(20);
  while (!ready()) {
    std::this_thread::sleep_for(pause);
    pause = std::min(2 * pause, std::chrono::microseconds(500));
  }
}

// Returns once a message from `source` (or MPI_ANY_SOURCE) with `tag` has arrived, sleeping.
void sleep_until_message(MPI_Comm comm, int source, int tag) {
  sleep_until([&] {
    int arrived = 0;
    check(MPI_Iprobe(source, tag, comm, &arrived, MPI_STATUS_IGNORE), "Iprobe");
    return arrived != 0;
  });
}

}  // namespace

int MpiCommunicator::next_sender(int tag) {
  MPI_Comm comm = as_comm(comm_);
  for (;;) {
    for (int k = 0; k < size_; ++k) {
      const int peer = (next_any_ + k) % size_;
      int arrived = 0;
      check(MPI_Iprobe(peer, tag, comm, &arrived, MPI_STATUS_IGNORE), "Iprobe");
      if (arrived == 0) continue;
      next_any_ = (peer + 1) % size_;
      return peer;
    }
    if (idle_wait_) {
      sleep_until_message(comm, MPI_ANY_SOURCE, tag);
    } else {
      check(MPI_Probe(MPI_ANY_SOURCE, tag, comm, MPI_STATUS_IGNORE), "Probe");
    }
  }
}

void MpiCommunicator::await_peers() {
  if (!idle_wait_ || size_ == 1) return;
  MPI_Request request;
  check(MPI_Ibarrier(as_comm(comm_), &request), "Ibarrier");
  sleep_until([&] {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "Test");
    return done != 0;
  });
}

bool MpiCommunicator::staged(const at::Tensor& t) const {
  return stage_all_ || (t.is_cuda() && !mpi_cuda_aware());
}

at::Tensor MpiCommunicator::readable(const at::Tensor& t, HostStaging::Slot slot) {
  if (staged(t)) return staging_.copy_in(t, slot);
  wait_for_device(t.device());  // MPI reads the memory itself: the kernels writing it must be done
  return t;
}

at::Tensor MpiCommunicator::writable(const at::Tensor& t, HostStaging::Slot slot) {
  if (staged(t)) return staging_.room(t.numel(), t.scalar_type(), slot, t.device());
  wait_for_device(t.device());
  return t;
}

namespace {

// After an operation: a staged result goes into the caller's tensor.
void copy_back(const at::Tensor& buffer, at::Tensor& t) {
  if (!buffer.is_same(t)) HostStaging::copy_out(buffer, t);
}

}  // namespace

void MpiCommunicator::allreduce_sum(at::Tensor& t) {
  check_tensor(t, "allreduce");
  if (size_ == 1 || t.numel() == 0) return;
  const MPI_Datatype type = mpi_type(t, "allreduce");
  at::Tensor buffer = readable(t, HostStaging::kInput);
  await_peers();
  check(MPI_Allreduce(MPI_IN_PLACE, buffer.data_ptr(), count_of(t.numel(), "allreduce"), type,
                      MPI_SUM, as_comm(comm_)),
        "Allreduce");
  copy_back(buffer, t);
}

at::Tensor MpiCommunicator::gather_output(int64_t numel, const at::TensorOptions& options) {
  constexpr int64_t kReuseFromBytes = int64_t{1} << 20;
  const int64_t bytes = numel * static_cast<int64_t>(options.dtype().itemsize());
  // A device's caching allocator already reuses its blocks.
  if (bytes < kReuseFromBytes || !options.device().is_cpu()) return at::empty({numel}, options);
  const bool free = gather_storage_.defined() && gather_storage_.storage().use_count() == 1;
  if (!free || gather_storage_.numel() < bytes)
    gather_storage_ = at::empty({bytes}, at::TensorOptions().dtype(at::kByte));
  return gather_storage_.narrow(0, 0, bytes).view(options.dtype().toScalarType());
}

at::Tensor MpiCommunicator::allgather(const at::Tensor& t) {
  check_tensor(t, "allgather");
  at::Tensor out = gather_output(t.numel() * size_, t.options());
  int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
  const at::Tensor in = readable(t, HostStaging::kInput);
  const at::Tensor into = writable(out, HostStaging::kOutput);
  await_peers();
  check(MPI_Allgather(in.data_ptr(), count_of(bytes, "allgather"), MPI_BYTE, into.data_ptr(),
                      count_of(bytes, "allgather"), MPI_BYTE, as_comm(comm_)),
        "Allgather");
  copy_back(into, out);
  return out;
}

std::vector<at::Tensor> MpiCommunicator::allgatherv(const at::Tensor& t) {
  check_tensor(t, "allgatherv");
  int64_t mine = t.numel();
  std::vector<int64_t> counts(size_);
  await_peers();
  check(MPI_Allgather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, as_comm(comm_)),
        "Allgather");
  const int64_t esize = t.element_size();
  std::vector<int> byte_counts(size_), displs(size_);
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    byte_counts[r] = count_of(counts[r] * esize, "allgatherv");
    displs[r] = count_of(total * esize, "allgatherv");
    total += counts[r];
  }
  at::Tensor flat = gather_output(total, t.options());
  const at::Tensor in = readable(t, HostStaging::kInput);
  const at::Tensor into = writable(flat, HostStaging::kOutput);
  check(
      MPI_Allgatherv(in.data_ptr(), count_of(mine * esize, "allgatherv"), MPI_BYTE, into.data_ptr(),
                     byte_counts.data(), displs.data(), MPI_BYTE, as_comm(comm_)),
      "Allgatherv");
  copy_back(into, flat);
  std::vector<at::Tensor> out;
  int64_t off = 0;
  for (int r = 0; r < size_; ++r) {
    out.push_back(flat.narrow(0, off, counts[r]));
    off += counts[r];
  }
  return out;
}

void MpiCommunicator::broadcast(at::Tensor& t, int root) {
  check_tensor(t, "broadcast");
  if (size_ == 1) return;
  int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
  // The root's tensor is read, every other rank's written.
  const at::Tensor buffer =
      rank_ == root ? readable(t, HostStaging::kInput) : writable(t, HostStaging::kInput);
  await_peers();
  check(MPI_Bcast(buffer.data_ptr(), count_of(bytes, "broadcast"), MPI_BYTE, root, as_comm(comm_)),
        "Bcast");
  if (rank_ != root) copy_back(buffer, t);
}

void MpiCommunicator::barrier() { check(MPI_Barrier(as_comm(comm_)), "Barrier"); }

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

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key, const std::string&) {
  auto* part = new MPI_Comm(MPI_COMM_NULL);
  const int rc = MPI_Comm_split(as_comm(comm_), color, key, part);
  if (rc != MPI_SUCCESS) {
    delete part;
    check(rc, "Comm_split");
  }
  return derived(part);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::derived(void* comm) const {
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator(comm));
  c->idle_wait_ = idle_wait_;
  c->stage_all_ = stage_all_;
  c->device_ = device_;
  return c;
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::on_device(const at::Device& device) {
  if (!device.is_cpu() && !device.is_cuda())
    throw CommError("backend mpi: tensors on " + device.str() + " are not supported (cpu or cuda)");
  auto* dup = new MPI_Comm(MPI_COMM_NULL);
  const int rc = MPI_Comm_dup(as_comm(comm_), dup);
  if (rc != MPI_SUCCESS) {
    delete dup;
    check(rc, "Comm_dup");
  }
  std::unique_ptr<MpiCommunicator> c = derived(dup);
  c->device_ = device;
  return c;
}

void MpiCommunicator::abort_job(int code) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace cedar
