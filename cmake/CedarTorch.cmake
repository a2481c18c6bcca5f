# Finds LibTorch. Order: an explicit CMAKE_PREFIX_PATH / Torch_DIR, else the torch package of
# CEDAR_PYTHON (the setup script's virtual environment), else python3 on PATH.
set(_py "${CEDAR_PYTHON}")
if(NOT _py AND NOT Torch_DIR)
  find_program(_py NAMES python3 python)
endif()
if(_py)
    execute_process(
      COMMAND "${_py}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET RESULT_VARIABLE _torch_rc)
    if(_torch_rc EQUAL 0 AND _torch_prefix)
      list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
      get_filename_component(CEDAR_TORCH_SITE "${_torch_prefix}/../../.." ABSOLUTE)
    endif()
endif()

find_package(Torch REQUIRED)
message(STATUS "LibTorch: ${Torch_DIR} (CUDA: ${TORCH_CUDA_LIBRARIES})")

# The GPU path: compiled whenever LibTorch was built with CUDA and NCCL headers are present.
set(CEDAR_HAVE_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(CEDAR_HAVE_CUDA ON)
endif()
set(CEDAR_HAVE_NCCL OFF)
if(CEDAR_WITH_NCCL AND CEDAR_HAVE_CUDA)
  # Prefer the NCCL that ships with the torch wheel, so one NCCL is loaded at run time.
  find_path(NCCL_INCLUDE_DIR nccl.h
    HINTS "${CEDAR_TORCH_SITE}/nvidia/nccl/include" ENV NCCL_HOME
    PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY NAMES libnccl.so.2 nccl NAMES_PER_DIR
    HINTS "${CEDAR_TORCH_SITE}/nvidia/nccl/lib" ENV NCCL_HOME
    PATH_SUFFIXES lib lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(CEDAR_HAVE_NCCL ON)
    find_package(CUDAToolkit REQUIRED)
    message(STATUS "NCCL: ${NCCL_LIBRARY}")
  endif()
endif()

# LibTorch's CUDA library at run time (runner/cli/torch_cuda.h): a target whose property
# CEDAR_TORCH_CUDA_AT_RUN_TIME is ON links without libtorch_cuda.so, which every consumer of
# `torch` otherwise gets with --no-as-needed (its static initialisation registers the CUDA kernels)
# and loads it itself where an NVIDIA driver is installed. Cedar's own code references none of its
# symbols. CEDAR_TORCH_CUDA_LINK_ITEM is empty where this LibTorch's targets do not have the shape
# this expects; the property then changes nothing.
set(CEDAR_TORCH_CUDA_LINK_ITEM "")
if(CEDAR_HAVE_CUDA AND TARGET torch_cuda_library)
  get_target_property(_cuda_links torch_cuda_library INTERFACE_LINK_LIBRARIES)
  list(GET _cuda_links 0 _cuda_first)
  if(_cuda_first MATCHES "no-as-needed.*TARGET_FILE:torch_cuda")
    list(REMOVE_AT _cuda_links 0)
    set_property(TARGET torch_cuda_library PROPERTY INTERFACE_LINK_LIBRARIES
      "$<$<NOT:$<BOOL:$<TARGET_PROPERTY:CEDAR_TORCH_CUDA_AT_RUN_TIME>>>:${_cuda_first}>"
      ${_cuda_links})
    set(CEDAR_TORCH_CUDA_LINK_ITEM "${_cuda_first}")
  else()
    message(STATUS "LibTorch's torch_cuda_library has another shape: cedar links libtorch_cuda.so")
  endif()
endif()
