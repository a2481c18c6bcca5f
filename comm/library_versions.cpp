#include "comm/library_versions.h"

#include <mpi.h>

#ifdef CEDAR_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace cedar {

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "";
  (void)len;  // some libraries count the terminating NUL
  std::string s(buf);
  const size_t eol = s.find_first_of("\r\n");
  return eol == std::string::npos ? s : s.substr(0, eol);
}

#ifdef CEDAR_HAVE_NCCL
namespace {
std::string major_minor(int v) {  // CUDA encodes 13.0 as 13000
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

std::string nccl_library_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  // NCCL >= 2.9 encodes x.y.z as x*10000 + y*100 + z.
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
         std::to_string(v % 100);
}

std::string cuda_versions() {
  int runtime = 0, driver = 0;
  std::string s;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) s = "runtime " + major_minor(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0)
    s += (s.empty() ? "" : ", ") + std::string("driver ") + major_minor(driver);
  else
    s += (s.empty() ? "" : ", ") + std::string("no driver");
  return s;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "";
  return prop.name;
}
#else
std::string nccl_library_version() { return ""; }
std::string cuda_versions() { return ""; }
std::string cuda_device_name(int) { return ""; }
#endif

}  // namespace cedar
