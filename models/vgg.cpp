// VGG with batch norm, CIFAR variant (K. Simonyan, A. Zisserman, "Very Deep Convolutional
// Networks for Large-Scale Image Recognition", ICLR 2015, Table 1 configurations A, B, D, E =
// vgg11, vgg13, vgg16, vgg19; batch norm after every conv as in torchvision's vgg*_bn).
//
//   features: the configuration's 3x3 conv (padding 1) + BN + ReLU layers, with a 2x2 stride-2
//             max-pool after each of the five groups
//   classifier: one Linear(512 * s * s, num_classes), s = max(1, image_size / 32)
//
// Input sizes that are not multiples of 32 (e.g. 28x28 Fashion-MNIST): the max-pools use ceil
// mode, so no feature map ever shrinks to zero (28 -> 14 -> 7 -> 4 -> 2 -> 1), and the features
// are adaptive-average-pooled to s x s before the classifier. For multiples of 32 both are
// no-ops (ceil and floor mode agree and the map is already s x s), so the network is exactly the
// usual CIFAR VGG; otherwise the leftover map (ceil(image_size / 32) wide) is averaged down to s.
//
// Init as torchvision: conv weights Kaiming-normal (fan-out, ReLU) with zero bias, BN weight 1 /
// bias 0, the linear layer N(0, 0.01) with zero bias. Names: features.{i}.{weight,bias,...},
// classifier.{weight,bias}.
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/model.h"

namespace cedar {
namespace {

constexpr int64_t kPool = 0;  // marks a max-pool in a configuration

std::vector<int64_t> vgg_config(int depth) {
  switch (depth) {
    case 11: return {64, kPool, 128, kPool, 256, 256, kPool, 512, 512, kPool, 512, 512, kPool};
    case 13:
      return {64, 64, kPool, 128, 128, kPool, 256, 256, kPool, 512, 512, kPool, 512, 512, kPool};
    case 16:
      return {64,    64,  kPool, 128, 128,   kPool, 256, 256, 256,
              kPool, 512, 512,   512, kPool, 512,   512, 512, kPool};
    case 19:
      return {64,  64,  kPool, 128, 128,   kPool, 256, 256, 256, 256,  kPool,
              512, 512, 512,   512, kPool, 512,   512, 512, 512, kPool};
    default:
      throw std::invalid_argument("VGG depth must be 11, 13, 16 or 19, got " +
                                  std::to_string(depth));
  }
}

class Vgg : public Model {
 public:
  Vgg(const std::vector<int64_t>& config, const ModelSpec& spec)
      : side_(std::max<int64_t>(1, spec.image_size / 32)),
        features_(register_module("features", make_features(config, spec.in_channels))),
        classifier_(register_module("classifier",
                                    torch::nn::Linear(512 * side_ * side_, spec.num_classes))) {
    for (const auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
        torch::nn::init::zeros_(conv->bias);
      }
    }
    torch::nn::init::normal_(classifier_->weight, 0.0, 0.01);
    torch::nn::init::zeros_(classifier_->bias);
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = features_->forward(x);
    x = torch::adaptive_avg_pool2d(x, {side_, side_}).flatten(1);
    return classifier_->forward(x);
  }

 private:
  static torch::nn::Sequential make_features(const std::vector<int64_t>& config,
                                             int64_t in_channels) {
    torch::nn::Sequential features;
    for (int64_t v : config) {
      if (v == kPool) {
        features->push_back(
            torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2).ceil_mode(true)));
      } else {
        features->push_back(
            torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, v, 3).padding(1)));
        features->push_back(torch::nn::BatchNorm2d(v));
        features->push_back(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
        in_channels = v;
      }
    }
    return features;
  }

  int64_t side_;
  torch::nn::Sequential features_;
  torch::nn::Linear classifier_;
};

}  // namespace

// depth 11, 13, 16 or 19; called by the registry.
std::shared_ptr<Model> make_vgg(const ModelSpec& spec, int depth) {
  return std::make_shared<Vgg>(vgg_config(depth), spec);
}

}  // namespace cedar
