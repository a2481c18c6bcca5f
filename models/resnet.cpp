// ImageNet-style ResNets as in torchvision (K. He, X. Zhang, S. Ren, J. Sun, "Deep Residual
// Learning for Image Recognition", CVPR 2016, Table 1): resnet18 and resnet34 (BasicBlock,
// [2,2,2,2] and [3,4,6,3]) and resnet50 (Bottleneck, [3,4,6,3], stride on the 3x3 conv as in
// torchvision's "v1.5").
//
//   stem: 7x7 stride-2 conv, BN, ReLU, 3x3 stride-2 max-pool
//         (ModelSpec::small_input: 3x3 stride-1 conv, BN, ReLU, no max-pool, for 32x32 images)
//   layer1..layer4: 64, 128, 256, 512 planes (x4 for Bottleneck), stride 2 from layer2 on
//   adaptive average pool to 1x1 -> fc(512 * expansion, num_classes)
//
// Projection shortcuts (1x1 conv + BN, named "downsample") where the shape changes. Conv weights
// use Kaiming-normal init (fan-out, ReLU), BN weight 1 / bias 0, fc keeps LibTorch's default init,
// all as torchvision. At 3 channels / 1000 classes: resnet18 11,689,512, resnet34 21,797,672,
// resnet50 25,557,032 trainable parameters. Parameter names match torchvision's state_dict keys.
#include <torch/torch.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/conv_layers.h"
#include "models/model.h"

namespace cedar {
namespace {

torch::nn::Conv2d conv1x1(int64_t in_planes, int64_t out_planes, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in_planes, out_planes, 1).stride(stride).bias(false));
}

// Projection shortcut: 1x1 conv + BN ("downsample.0", "downsample.1"); empty when not needed.
torch::nn::Sequential make_downsample(int64_t in_planes, int64_t out_planes, int64_t stride) {
  if (stride == 1 && in_planes == out_planes) return torch::nn::Sequential(nullptr);
  return torch::nn::Sequential(conv1x1(in_planes, out_planes, stride),
                               torch::nn::BatchNorm2d(out_planes));
}

class BasicBlock : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;

  BasicBlock(int64_t in_planes, int64_t planes, int64_t stride)
      : conv1_(register_module("conv1", conv3x3(in_planes, planes, stride))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(planes))),
        conv2_(register_module("conv2", conv3x3(planes, planes, 1))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(planes))),
        downsample_(make_downsample(in_planes, planes * kExpansion, stride)) {
    if (downsample_) register_module("downsample", downsample_);
  }

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor out = torch::relu(bn1_->forward(conv1_->forward(x)));
    out = bn2_->forward(conv2_->forward(out));
    return torch::relu(out + (downsample_ ? downsample_->forward(x) : x));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Sequential downsample_;
};

class Bottleneck : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;

  Bottleneck(int64_t in_planes, int64_t planes, int64_t stride)
      : conv1_(register_module("conv1", conv1x1(in_planes, planes, 1))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(planes))),
        conv2_(register_module("conv2", conv3x3(planes, planes, stride))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(planes))),
        conv3_(register_module("conv3", conv1x1(planes, planes * kExpansion, 1))),
        bn3_(register_module("bn3", torch::nn::BatchNorm2d(planes * kExpansion))),
        downsample_(make_downsample(in_planes, planes * kExpansion, stride)) {
    if (downsample_) register_module("downsample", downsample_);
  }

  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor out = torch::relu(bn1_->forward(conv1_->forward(x)));
    out = torch::relu(bn2_->forward(conv2_->forward(out)));
    out = bn3_->forward(conv3_->forward(out));
    return torch::relu(out + (downsample_ ? downsample_->forward(x) : x));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Conv2d conv3_;
  torch::nn::BatchNorm2d bn3_;
  torch::nn::Sequential downsample_;
};

template <typename Block>
class ResNet : public Model {
 public:
  ResNet(const std::vector<int64_t>& blocks, const ModelSpec& spec)
      : small_input_(spec.small_input),
        conv1_(register_module("conv1", make_stem(spec))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(64))),
        layer1_(register_module("layer1", make_layer(64, blocks.at(0), 1))),
        layer2_(register_module("layer2", make_layer(128, blocks.at(1), 2))),
        layer3_(register_module("layer3", make_layer(256, blocks.at(2), 2))),
        layer4_(register_module("layer4", make_layer(512, blocks.at(3), 2))),
        fc_(register_module("fc", torch::nn::Linear(512 * Block::kExpansion, spec.num_classes))) {
    for (const auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->template as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
      }
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(bn1_->forward(conv1_->forward(x)));
    if (!small_input_) x = torch::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
    x = layer4_->forward(layer3_->forward(layer2_->forward(layer1_->forward(x))));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_->forward(x);
  }

 private:
  static torch::nn::Conv2d make_stem(const ModelSpec& spec) {
    if (spec.small_input) return conv3x3(spec.in_channels, 64, 1);
    return torch::nn::Conv2d(
        torch::nn::Conv2dOptions(spec.in_channels, 64, 7).stride(2).padding(3).bias(false));
  }

  // Uses and advances in_planes_, so layers must be built in order (member-init order does).
  torch::nn::Sequential make_layer(int64_t planes, int64_t blocks, int64_t stride) {
    torch::nn::Sequential layer;
    for (int64_t i = 0; i < blocks; ++i) {
      layer->push_back(std::make_shared<Block>(in_planes_, planes, i == 0 ? stride : 1));
      in_planes_ = planes * Block::kExpansion;
    }
    return layer;
  }

  bool small_input_;
  int64_t in_planes_ = 64;
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Sequential layer1_;
  torch::nn::Sequential layer2_;
  torch::nn::Sequential layer3_;
  torch::nn::Sequential layer4_;
  torch::nn::Linear fc_;
};

}  // namespace

// depth 18, 34 or 50; called by the registry.
std::shared_ptr<Model> make_resnet(const ModelSpec& spec, int depth) {
  switch (depth) {
    case 18: return std::make_shared<ResNet<BasicBlock>>(std::vector<int64_t>{2, 2, 2, 2}, spec);
    case 34: return std::make_shared<ResNet<BasicBlock>>(std::vector<int64_t>{3, 4, 6, 3}, spec);
    case 50: return std::make_shared<ResNet<Bottleneck>>(std::vector<int64_t>{3, 4, 6, 3}, spec);
    default:
      throw std::invalid_argument("ImageNet ResNet depth must be 18, 34 or 50, got " +
                                  std::to_string(depth));
  }
}

}  // namespace cedar
