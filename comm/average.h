#pragma once
// Averaging tensors over ranks in place, fused: one allreduce per (dtype, device) group of the
// tensors instead of one per tensor. Local SGD's model averaging and the evaluation of the
// averaged model both use it.
#include <ATen/core/Tensor.h>

#include <vector>

namespace cedar {

class Communicator;

// Every tensor becomes the mean over ranks of its values (sum, then divide by the world size).
// A group on another device than comm.device() is summed there and copied back.
void average_in_place(const std::vector<at::Tensor>& tensors, Communicator& comm);

}  // namespace cedar
