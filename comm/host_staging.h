#pragma once
// Host buffers through which MpiCommunicator moves tensors whose memory MPI cannot read (CUDA
// tensors, when the MPI library is not CUDA-aware): copy in, the operation on host memory, copy
// out. One buffer per slot (an operation's input, its output), grown as needed and reused by
// every later call; page-locked (pinned) once a CUDA tensor uses it, so that the device copies run
// at full speed. No view of a buffer leaves the communicator: results are copied out.
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace cedar {

class HostStaging {
 public:
  enum Slot { kInput = 0, kOutput = 1 };

  // A contiguous host tensor of `t`'s dtype and element count in `slot`'s buffer, holding a copy
  // of `t` (from any device; the copy waits for the work that produces `t`).
  at::Tensor copy_in(const at::Tensor& t, Slot slot);
  // A host tensor of `numel` elements of `dtype` in `slot`'s buffer, its contents undefined;
  // `for_device` is where it will be copied from or to (pinned memory for CUDA).
  at::Tensor room(int64_t numel, at::ScalarType dtype, Slot slot, const at::Device& for_device);
  // Copies `host` (a buffer from copy_in or room) into `t`, on `t`'s device, and returns once the
  // copy is done (the buffer may be reused right after).
  static void copy_out(const at::Tensor& host, at::Tensor& t);

  // Bytes held by `slot`'s buffer (0 before its first use).
  int64_t capacity(Slot slot) const;
  // Whether `slot`'s buffer is page-locked.
  bool pinned(Slot slot) const { return pinned_[slot]; }

 private:
  std::array<at::Tensor, 2> buffers_;  // uint8
  std::array<bool, 2> pinned_{{false, false}};
};

}  // namespace cedar
