#pragma once
// Every network Cedar trains: a torch::nn::Module with a virtual forward, chosen by name.
#include <torch/nn/module.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace cedar {

// Shape of the images a model is built for and the number of classes it predicts.
struct ModelSpec {
  std::string name;  // registry name, e.g. "resnet20", "resnet18", "vgg16"
  int64_t in_channels = 3;
  int64_t num_classes = 10;
  int64_t image_size = 32;  // height == width of the input
  bool small_input =
      false;      // ImageNet-style ResNets: 3x3 stride-1 stem, no max-pool (CIFAR-size inputs)
  double l2 = 0;  // logistic: the weight λ of the regulariser (λ/2)‖θ‖² added to the mean loss
};

class Model : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // The training objective of a batch: the mean over its samples of the loss of `out` (forward's
  // output) against `target`, plus any regulariser the model defines. Classifiers: cross-entropy
  // against int64 class labels.
  virtual torch::Tensor loss(const torch::Tensor& out, const torch::Tensor& target);
  // How many of the batch's samples are predicted right (a scalar tensor). Classifiers: the
  // arg-max equals the label.
  virtual torch::Tensor correct(const torch::Tensor& out, const torch::Tensor& target);
};

// Builds the model named in spec.name; throws std::invalid_argument naming the unknown model
// and listing the known ones.
std::shared_ptr<Model> make_model(const ModelSpec& spec);

// Names and one-line descriptions of every registered model, in registration order.
struct ModelInfo {
  std::string name;
  std::string description;
};
const std::vector<ModelInfo>& model_catalog();

// Number of trainable scalars (what papers quote as "parameters").
int64_t count_parameters(const torch::nn::Module& m);

}  // namespace cedar
