#pragma once
// Pieces of a checkpoint's state shared by the trainer and the parameter server: the named tensors
// of runner/train/checkpoint.h for byte strings, optimizer buffers, the random generator and the
// communication totals, each with a reader that names what is missing or does not fit.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "comm/metered_communicator.h"
#include "runner/train/checkpoint.h"

namespace cedar {

at::Tensor bytes_tensor(const std::string& s);
std::string tensor_bytes(const at::Tensor& t);

// state[key]; throws std::runtime_error naming the key when it is absent.
const at::Tensor& need(const TensorMap& state, const std::string& key);
// Copies a saved tensor into a live one; throws naming `key` when the shapes differ.
void copy_into(const at::Tensor& dst, const at::Tensor& src, const std::string& key);

// Per-parameter buffers (undefined until first used) as prefix + index, on the CPU.
void save_buffers(TensorMap& state, const std::string& prefix,
                  const std::vector<at::Tensor>& buffers);
// The buffers save_buffers wrote, each on its parameter's device; absent ones stay undefined.
void restore_buffers(const TensorMap& state, const std::string& prefix,
                     const std::vector<NamedTensor>& params, std::vector<at::Tensor>& buffers);

// The default CPU generator (dropout, the algorithms' draws).
void save_cpu_rng(TensorMap& state);
void restore_cpu_rng(const TensorMap& state);

// The metered communicator's per-operation totals ("comm.<op>", "comm.<op>.seconds").
void save_comm_totals(TensorMap& state, const MeteredCommunicator& comm);
void restore_comm_totals(const TensorMap& state, MeteredCommunicator& comm);

}  // namespace cedar
