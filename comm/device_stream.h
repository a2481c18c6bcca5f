#pragma once
// Waiting for a device: CUDA kernels and NCCL collectives are queued on a stream and return at
// once, so a clock read around them measures the queueing. Timings that compare with the CPU's
// wait for the device's current stream at their boundaries.
#include <c10/core/Device.h>

namespace cedar {

// Returns once the work queued on `device`'s current stream (of this thread) is done. Nothing to
// wait for on the CPU (and on devices without streams).
void wait_for_device(const c10::Device& device);

}  // namespace cedar
