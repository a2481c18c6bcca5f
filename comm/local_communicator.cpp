#include <ATen/ATen.h>

#include "comm/communicator.h"

namespace cedar {

at::Tensor LocalCommunicator::allgather(const at::Tensor& t) { return t.reshape({-1}).clone(); }

std::vector<at::Tensor> LocalCommunicator::allgatherv(const at::Tensor& t) {
  return {t.reshape({-1}).clone()};
}

}  // namespace cedar
