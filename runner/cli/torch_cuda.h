#pragma once
// LibTorch's CUDA library (libtorch_cuda.so, with cuBLAS, cuDNN and the other CUDA libraries it
// needs) is loaded by the cedar executable itself, not by the dynamic linker: its static
// initialisation registers a CUDA kernel for every operator, about 0.15 s of CPU time in every
// process, and without an NVIDIA driver no CUDA device can be used anyway. The executable is
// linked without it (cmake/CedarTorch.cmake: CEDAR_TORCH_CUDA_AT_RUN_TIME) where LibTorch has
// CUDA; elsewhere this does nothing.
namespace cedar {

// Loads libtorch_cuda.so where an NVIDIA driver is installed (libcuda.so.1 loads), as the dynamic
// linker would have: called first in main, before any LibTorch call, so its kernels and CUDA hooks
// are registered before anything asks for them. Throws std::runtime_error naming the library
// when a driver is installed but the library does not load.
void load_torch_cuda_where_a_driver_is();

}  // namespace cedar
