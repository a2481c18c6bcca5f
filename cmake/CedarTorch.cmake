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
