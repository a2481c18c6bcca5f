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
#include "comm/mpi_detail.h"

namespace cedar {

using namespace mpi_detail;

namespace {

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
  // At exit, and at the quick exit that ends `cedar` (runner/cli/main.cpp).
  std::atexit(finalize_at_exit);
  std::at_quick_exit(finalize_at_exit);
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
