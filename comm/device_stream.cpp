#include "comm/device_stream.h"

#include <c10/core/impl/VirtualGuardImpl.h>

namespace cedar {

void wait_for_device(const c10::Device& device) {
  if (!device.is_cuda()) return;
  // Through the device-generic guard, which LibTorch's CUDA library registers: no CUDA headers.
  c10::impl::VirtualGuardImpl guard(device.type());
  guard.getStream(device).synchronize();
}

}  // namespace cedar
