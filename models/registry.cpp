// The model registry: one explicit, ordered list of names (no static-initialisation tricks).
// To add a model, write its factory in its own file and add one line to kEntries below.
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/model.h"

namespace cedar {

// Factories defined next to each architecture (resnet_cifar.cpp, resnet.cpp, vgg.cpp, lenet.cpp).
std::shared_ptr<Model> make_resnet_cifar(const ModelSpec& spec, int depth);
std::shared_ptr<Model> make_resnet(const ModelSpec& spec, int depth);
std::shared_ptr<Model> make_vgg(const ModelSpec& spec, int depth);
std::shared_ptr<Model> make_lenet5(const ModelSpec& spec);
std::shared_ptr<Model> make_linear_regression(const ModelSpec& spec);
std::shared_ptr<Model> make_logistic_regression(const ModelSpec& spec);

namespace {

using Factory = std::function<std::shared_ptr<Model>(const ModelSpec&)>;

struct Entry {
  ModelInfo info;
  Factory factory;
};

Factory cifar_resnet(int depth) {
  return [depth](const ModelSpec& s) { return make_resnet_cifar(s, depth); };
}
Factory imagenet_resnet(int depth) {
  return [depth](const ModelSpec& s) { return make_resnet(s, depth); };
}
Factory vgg(int depth) {
  return [depth](const ModelSpec& s) { return make_vgg(s, depth); };
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {{"resnet20", "CIFAR ResNet-20 (He et al. 2016 sec. 4.2), option A shortcuts, 0.27M params"},
       cifar_resnet(20)},
      {{"resnet32", "CIFAR ResNet-32 (He et al. 2016 sec. 4.2), option A shortcuts, 0.46M params"},
       cifar_resnet(32)},
      {{"resnet44", "CIFAR ResNet-44 (He et al. 2016 sec. 4.2), option A shortcuts, 0.66M params"},
       cifar_resnet(44)},
      {{"resnet56", "CIFAR ResNet-56 (He et al. 2016 sec. 4.2), option A shortcuts, 0.85M params"},
       cifar_resnet(56)},
      {{"resnet110", "CIFAR ResNet-110 (He et al. 2016 sec. 4.2), option A shortcuts, 1.7M params"},
       cifar_resnet(110)},
      {{"resnet18", "ImageNet ResNet-18 (torchvision), BasicBlock; small_input for 32x32 images"},
       imagenet_resnet(18)},
      {{"resnet34", "ImageNet ResNet-34 (torchvision), BasicBlock; small_input for 32x32 images"},
       imagenet_resnet(34)},
      {{"resnet50", "ImageNet ResNet-50 (torchvision v1.5), Bottleneck; small_input for 32x32"},
       imagenet_resnet(50)},
      {{"vgg11", "VGG-11 with batch norm (config A), CIFAR variant, one linear classifier"},
       vgg(11)},
      {{"vgg13", "VGG-13 with batch norm (config B), CIFAR variant, one linear classifier"},
       vgg(13)},
      {{"vgg16", "VGG-16 with batch norm (config D), CIFAR variant, one linear classifier"},
       vgg(16)},
      {{"vgg19", "VGG-19 with batch norm (config E), CIFAR variant, one linear classifier"},
       vgg(19)},
      {{"lenet5",
        "LeNet-5 (LeCun et al. 1998) with ReLU/max-pool, 61,706 params: the fast demo model"},
       make_lenet5},
      {{"linear",
        "least squares, one linear layer without bias: (1/2n)||X theta - y||^2 (LAG's linear "
        "regression; regression data sets only)"},
       make_linear_regression},
      {{"logistic",
        "binary logistic regression with labels +-1 and (l2/2)||theta||^2 (LAG's logistic "
        "regression; regression data sets only)"},
       make_logistic_regression},
  };
  return kEntries;
}

std::string known_names() {
  std::string names;
  for (const Entry& e : entries()) {
    if (!names.empty()) names += ", ";
    names += e.info.name;
  }
  return names;
}

void check_positive(const ModelSpec& spec, const char* field, int64_t value) {
  if (value <= 0) {
    throw std::invalid_argument("model '" + spec.name + "': " + field + " must be positive, got " +
                                std::to_string(value));
  }
}

}  // namespace

torch::Tensor Model::loss(const torch::Tensor& out, const torch::Tensor& target) {
  return torch::nn::functional::cross_entropy(out, target);
}

torch::Tensor Model::correct(const torch::Tensor& out, const torch::Tensor& target) {
  return out.argmax(1).eq(target).sum();
}

std::shared_ptr<Model> make_model(const ModelSpec& spec) {
  for (const Entry& e : entries()) {
    if (e.info.name != spec.name) continue;
    check_positive(spec, "in_channels", spec.in_channels);
    check_positive(spec, "num_classes", spec.num_classes);
    check_positive(spec, "image_size", spec.image_size);
    return e.factory(spec);
  }
  throw std::invalid_argument("unknown model '" + spec.name + "' (known: " + known_names() + ")");
}

const std::vector<ModelInfo>& model_catalog() {
  static const std::vector<ModelInfo> kCatalog = [] {
    std::vector<ModelInfo> catalog;
    for (const Entry& e : entries()) catalog.push_back(e.info);
    return catalog;
  }();
  return kCatalog;
}

int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const torch::Tensor& p : m.parameters(/*recurse=*/true)) {
    if (p.requires_grad()) n += p.numel();
  }
  return n;
}

}  // namespace cedar
