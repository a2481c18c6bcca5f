#pragma once
// Versions of the communication libraries this binary runs with, for run records.
#include <string>

namespace cedar {

// MPI_Get_library_version's first line (callable before MPI_Init), e.g. "Open MPI v4.1.4, ...".
std::string mpi_library_version();
// The NCCL this build links, e.g. "2.27.7" ("" when built without NCCL).
std::string nccl_library_version();
// The CUDA runtime and driver versions, e.g. "runtime 13.0, driver 13.0" ("" without CUDA).
std::string cuda_versions();
// The name of CUDA device `device` ("" without CUDA).
std::string cuda_device_name(int device);

}  // namespace cedar
