#include "runner/cli/torch_cuda.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace cedar {

void load_torch_cuda_where_a_driver_is() {
#ifdef CEDAR_TORCH_CUDA_AT_RUN_TIME
  // The driver's library stays loaded: the CUDA runtime opens it again when a device is used.
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) == nullptr) return;
  // Found through the executable's run path, beside the libtorch_cpu.so it links.
  if (dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* why = dlerror();
    throw std::runtime_error(
        "an NVIDIA driver is installed (libcuda.so.1), but LibTorch's CUDA library "
        "libtorch_cuda.so did not load: " +
        std::string(why ? why : "unknown reason"));
  }
#endif
}

}  // namespace cedar
