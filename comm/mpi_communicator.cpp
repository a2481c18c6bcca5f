#include "comm/mpi_communicator.h"

#include <ATen/ATen.h>
#include <mpi.h>

#include <cstdlib>
#include <limits>

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

void check_cpu(const at::Tensor& t, const char* op) {
  if (!t.device().is_cpu())
    throw CommError(std::string("backend mpi does not support ") + op + " of " + t.device().str() +
                    " tensors (use the nccl backend for GPU tensors)");
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

MpiCommunicator::MpiCommunicator() {
  ensure_mpi_initialized();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

void MpiCommunicator::allreduce_sum(at::Tensor& t) {
  check_cpu(t, "allreduce");
  if (size_ == 1 || t.numel() == 0) return;
  check(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), count_of(t.numel(), "allreduce"),
                      mpi_type(t, "allreduce"), MPI_SUM, MPI_COMM_WORLD),
        "Allreduce");
}

at::Tensor MpiCommunicator::gather_output(int64_t numel, const at::TensorOptions& options) {
  constexpr int64_t kReuseFromBytes = int64_t{1} << 20;
  const int64_t bytes = numel * static_cast<int64_t>(options.dtype().itemsize());
  if (bytes < kReuseFromBytes) return at::empty({numel}, options);
  const bool free = gather_storage_.defined() && gather_storage_.storage().use_count() == 1;
  if (!free || gather_storage_.numel() < bytes)
    gather_storage_ = at::empty({bytes}, at::TensorOptions().dtype(at::kByte));
  return gather_storage_.narrow(0, 0, bytes).view(options.dtype().toScalarType());
}

at::Tensor MpiCommunicator::allgather(const at::Tensor& t) {
  check_cpu(t, "allgather");
  at::Tensor out = gather_output(t.numel() * size_, t.options());
  int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
  check(MPI_Allgather(t.data_ptr(), count_of(bytes, "allgather"), MPI_BYTE, out.data_ptr(),
                      count_of(bytes, "allgather"), MPI_BYTE, MPI_COMM_WORLD),
        "Allgather");
  return out;
}

std::vector<at::Tensor> MpiCommunicator::allgatherv(const at::Tensor& t) {
  check_cpu(t, "allgatherv");
  int64_t mine = t.numel();
  std::vector<int64_t> counts(size_);
  check(MPI_Allgather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, MPI_COMM_WORLD),
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
  check(
      MPI_Allgatherv(t.data_ptr(), count_of(mine * esize, "allgatherv"), MPI_BYTE, flat.data_ptr(),
                     byte_counts.data(), displs.data(), MPI_BYTE, MPI_COMM_WORLD),
      "Allgatherv");
  std::vector<at::Tensor> out;
  int64_t off = 0;
  for (int r = 0; r < size_; ++r) {
    out.push_back(flat.narrow(0, off, counts[r]));
    off += counts[r];
  }
  return out;
}

void MpiCommunicator::broadcast(at::Tensor& t, int root) {
  check_cpu(t, "broadcast");
  if (size_ == 1) return;
  int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
  check(MPI_Bcast(t.data_ptr(), count_of(bytes, "broadcast"), MPI_BYTE, root, MPI_COMM_WORLD),
        "Bcast");
}

void MpiCommunicator::barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "Barrier"); }

void MpiCommunicator::abort_job(int code) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace cedar
