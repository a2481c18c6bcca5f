#pragma once
// Collectives over NCCL on CUDA tensors, enqueued on LibTorch's current CUDA stream of the
// tensor's device. The NCCL unique id is distributed through a bootstrap communicator (MPI).
// Compiled whenever LibTorch has CUDA (CEDAR_HAVE_NCCL); used only where a GPU exists.
#include <memory>

#include "comm/communicator.h"

namespace cedar {

// True when this build has the NCCL backend and at least one CUDA device is visible.
bool nccl_available();

// Creates the NCCL communicator for rank bootstrap.rank() on CUDA device `device`.
// Throws CommError where NCCL or CUDA is unavailable.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device);

}  // namespace cedar
