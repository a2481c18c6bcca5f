// Convolution layers the ResNets share.
#pragma once

#include <torch/nn/modules/conv.h>

#include <cstdint>

namespace cedar {

// A 3x3 convolution with padding 1 and no bias (batch norm follows it), as in He et al.'s ResNets.
inline torch::nn::Conv2d conv3x3(int64_t in_planes, int64_t out_planes, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in_planes, out_planes, 3).stride(stride).padding(1).bias(false));
}

}  // namespace cedar
