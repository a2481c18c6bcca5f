// LeNet-5 (Y. LeCun, L. Bottou, Y. Bengio, P. Haffner, "Gradient-Based Learning Applied to
// Document Recognition", Proc. IEEE 1998), with ReLU and max-pooling as commonly trained today.
// The fast model of the quick demo: 61,706 parameters at 1x28x28 (or 32x32) and 10 classes.
//
//   conv1 5x5 -> 6 (padding 2 when the input is 28x28, so the map is 28x28 as in the paper's 32x32
//   input without padding) -> ReLU -> max-pool 2 -> conv2 5x5 -> 16 -> ReLU -> max-pool 2
//   -> fc 120 -> ReLU -> fc 84 -> ReLU -> fc num_classes
// Inputs of other sizes: the 16-channel map is adaptive-average-pooled to 5x5 before fc1.
#include <torch/torch.h>

#include "models/model.h"

namespace cedar {
namespace {

class LeNet5 final : public Model {
 public:
  explicit LeNet5(const ModelSpec& spec) {
    int64_t pad = spec.image_size < 32 ? (32 - spec.image_size + 1) / 2 : 0;
    conv1_ = register_module(
        "conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(spec.in_channels, 6, 5).padding(pad)));
    conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)));
    fc1_ = register_module("fc1", torch::nn::Linear(16 * 5 * 5, 120));
    fc2_ = register_module("fc2", torch::nn::Linear(120, 84));
    fc3_ = register_module("fc3", torch::nn::Linear(84, spec.num_classes));
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::max_pool2d(torch::relu(conv1_->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
    if (x.size(2) != 5 || x.size(3) != 5) x = torch::adaptive_avg_pool2d(x, {5, 5});
    x = torch::relu(fc1_->forward(x.flatten(1)));
    x = torch::relu(fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr}, fc3_{nullptr};
};

}  // namespace

std::shared_ptr<Model> make_lenet5(const ModelSpec& spec) { return std::make_shared<LeNet5>(spec); }

}  // namespace cedar
