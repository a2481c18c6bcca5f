#pragma once
// Internal to the MPI communicator (comm/mpi_communicator.cpp, comm/mpi_point_to_point.cpp):
// element types, argument checks, MPI error codes as CommError, and waiting without spinning.
#include <ATen/ATen.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <thread>

#include "comm/communicator.h"
#include "comm/device_stream.h"
#include "comm/mpi_communicator.h"

namespace cedar {

// A message posted and not yet known to be delivered.
struct MpiCommunicator::PostedSend {
  MPI_Request request = MPI_REQUEST_NULL;
  at::Tensor data;  // what MPI reads until the send completes
};

namespace mpi_detail {

inline MPI_Datatype mpi_type(const at::Tensor& t, const char* op) {
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

inline void check_tensor(const at::Tensor& t, const char* op) {
  if (!t.device().is_cpu() && !t.device().is_cuda())
    throw CommError(std::string("backend mpi does not support ") + op + " of " + t.device().str() +
                    " tensors (CPU and CUDA tensors only)");
  if (!t.is_contiguous()) throw CommError(std::string("mpi ") + op + ": tensor must be contiguous");
}

inline int count_of(int64_t n, const char* op) {
  if (n > std::numeric_limits<int>::max())
    throw CommError(std::string("mpi ") + op + ": more than 2^31-1 elements in one call");
  return static_cast<int>(n);
}

inline void check(int rc, const char* op) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw CommError(std::string("MPI_") + op + " failed: " + std::string(msg, len));
  }
}

inline MPI_Comm as_comm(void* comm) { return *static_cast<MPI_Comm*>(comm); }

// Calls `ready` until it returns true, sleeping between calls for pauses that grow from 20 to
// 500 us: how an idle-waiting rank waits without spinning.
template <class Ready>
inline void sleep_until(Ready ready) {
  std::chrono::microseconds pause(20);
  while (!ready()) {
    std::this_thread::sleep_for(pause);
    pause = std::min(2 * pause, std::chrono::microseconds(500));
  }
}

// Returns once a message from `source` (or MPI_ANY_SOURCE) with `tag` has arrived, sleeping.
inline void sleep_until_message(MPI_Comm comm, int source, int tag) {
  sleep_until([&] {
    int arrived = 0;
    check(MPI_Iprobe(source, tag, comm, &arrived, MPI_STATUS_IGNORE), "Iprobe");
    return arrived != 0;
  });
}

// After an operation: a staged result goes into the caller's tensor.
inline void copy_back(const at::Tensor& buffer, at::Tensor& t) {
  if (!buffer.is_same(t)) HostStaging::copy_out(buffer, t);
}

}  // namespace mpi_detail
}  // namespace cedar
