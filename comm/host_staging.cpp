#include "comm/host_staging.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace cedar {

at::Tensor HostStaging::room(int64_t numel, at::ScalarType dtype, Slot slot,
                             const at::Device& for_device) {
  const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(dtype));
  const bool pin = for_device.is_cuda();
  at::Tensor& buffer = buffers_[slot];
  // Grown to the largest request so far; a pinned buffer stays pinned (host tensors use it too).
  if (!buffer.defined() || buffer.numel() < bytes || (pin && !pinned_[slot])) {
    const int64_t size = buffer.defined() ? std::max(bytes, buffer.numel()) : bytes;
    pinned_[slot] = pin || pinned_[slot];
    buffer = at::empty({size}, at::TensorOptions().dtype(at::kByte).pinned_memory(pinned_[slot]));
  }
  return buffer.narrow(0, 0, bytes).view(dtype);
}

at::Tensor HostStaging::copy_in(const at::Tensor& t, Slot slot) {
  at::Tensor host = room(t.numel(), t.scalar_type(), slot, t.device());
  // A blocking copy: from a CUDA tensor it waits for the stream that produces t.
  host.copy_(t.reshape({-1}));
  return host;
}

void HostStaging::copy_out(const at::Tensor& host, at::Tensor& t) {
  // Blocking, so the buffer is free for the next call once this returns.
  t.copy_(host.view(t.sizes()));
}

int64_t HostStaging::capacity(Slot slot) const {
  return buffers_[slot].defined() ? buffers_[slot].numel() : 0;
}

}  // namespace cedar
