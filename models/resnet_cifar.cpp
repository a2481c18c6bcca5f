// CIFAR ResNets of K. He, X. Zhang, S. Ren, J. Sun, "Deep Residual Learning for Image
// Recognition", CVPR 2016, section 4.2 (resnet20/32/44/56/110, depth = 6n + 2).
//
//   3x3 conv, 16 -> stage 1: n basic blocks, 16 channels, stride 1
//                -> stage 2: n basic blocks, 32 channels, stride 2 in the first block
//                -> stage 3: n basic blocks, 64 channels, stride 2 in the first block
//                -> global average pool -> linear(64, num_classes)
//
// Shortcuts are the paper's "option A": identity, and where the shape changes a stride-2
// subsample with the new channels zero-padded (half before, half after), so shortcuts carry no
// parameters. Convolutions have no bias and are each followed by batch norm; conv and linear
// weights use Kaiming-normal init (fan-in, ReLU gain). At 3 input channels and 10 classes
// resnet20 has 269,722 trainable parameters and resnet110 1,727,962 (each extra block per stage
// adds 97,216). The 1,730,714 sometimes quoted for resnet110 includes option-B projection
// shortcuts (1x1 conv + BN at 16->32 and 32->64, 2,752 parameters), which option A does not have.
//
// Parameter names follow torchvision: conv1, bn1, layer{1,2,3}.{i}.{conv1,bn1,conv2,bn2}, fc.
#include <torch/torch.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "models/conv_layers.h"
#include "models/model.h"

namespace cedar {
namespace {

// conv-BN-ReLU-conv-BN plus an option-A shortcut, then ReLU.
class CifarBasicBlock : public torch::nn::Module {
 public:
  CifarBasicBlock(int64_t in_planes, int64_t planes, int64_t stride)
      : in_planes_(in_planes),
        planes_(planes),
        stride_(stride),
        conv1_(register_module("conv1", conv3x3(in_planes, planes, stride))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(planes))),
        conv2_(register_module("conv2", conv3x3(planes, planes, 1))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(planes))) {}

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor out = torch::relu(bn1_->forward(conv1_->forward(x)));
    out = bn2_->forward(conv2_->forward(out));
    return torch::relu(out + shortcut(x));
  }

 private:
  // Option A: identity, or subsample by the stride and zero-pad the extra channels.
  torch::Tensor shortcut(const torch::Tensor& x) const {
    if (stride_ == 1 && in_planes_ == planes_) return x;
    torch::Tensor y = x;
    if (stride_ != 1) {
      y = y.slice(2, 0, y.size(2), stride_).slice(3, 0, y.size(3), stride_);
    }
    const int64_t extra = planes_ - in_planes_;
    if (extra == 0) return y;
    return torch::constant_pad_nd(y, {0, 0, 0, 0, extra / 2, extra - extra / 2}, 0);
  }

  int64_t in_planes_;
  int64_t planes_;
  int64_t stride_;
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
};

class ResNetCifar : public Model {
 public:
  ResNetCifar(int64_t blocks_per_stage, const ModelSpec& spec)
      : conv1_(register_module("conv1", conv3x3(spec.in_channels, 16, 1))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(16))),
        layer1_(register_module("layer1", make_stage(16, 16, blocks_per_stage, 1))),
        layer2_(register_module("layer2", make_stage(16, 32, blocks_per_stage, 2))),
        layer3_(register_module("layer3", make_stage(32, 64, blocks_per_stage, 2))),
        fc_(register_module("fc", torch::nn::Linear(64, spec.num_classes))) {
    for (const auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanIn, torch::kReLU);
      } else if (auto* linear = m->as<torch::nn::Linear>()) {
        torch::nn::init::kaiming_normal_(linear->weight, 0.0, torch::kFanIn, torch::kReLU);
      }
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(bn1_->forward(conv1_->forward(x)));
    x = layer3_->forward(layer2_->forward(layer1_->forward(x)));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_->forward(x);
  }

 private:
  static torch::nn::Sequential make_stage(int64_t in_planes, int64_t planes, int64_t blocks,
                                          int64_t stride) {
    torch::nn::Sequential stage;
    for (int64_t i = 0; i < blocks; ++i) {
      stage->push_back(std::make_shared<CifarBasicBlock>(i == 0 ? in_planes : planes, planes,
                                                         i == 0 ? stride : 1));
    }
    return stage;
  }

  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Sequential layer1_;
  torch::nn::Sequential layer2_;
  torch::nn::Sequential layer3_;
  torch::nn::Linear fc_;
};

}  // namespace

// depth = 6n + 2 (20, 32, 44, 56, 110, ...); called by the registry.
std::shared_ptr<Model> make_resnet_cifar(const ModelSpec& spec, int depth) {
  if (depth < 8 || (depth - 2) % 6 != 0) {
    throw std::invalid_argument("CIFAR ResNet depth must be 6n+2, got " + std::to_string(depth));
  }
  return std::make_shared<ResNetCifar>((depth - 2) / 6, spec);
}

}  // namespace cedar
