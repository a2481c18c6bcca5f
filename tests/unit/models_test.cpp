// The model zoo: exact parameter counts quoted by the papers / torchvision, output shapes for
// every registered model, parameter names, gradients reaching every parameter, and errors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <set>
#include <stdexcept>
#include <string>

#include "models/model.h"

namespace cedar {
namespace {

ModelSpec spec_for(const std::string& name, int64_t channels, int64_t classes, int64_t size,
                   bool small_input = false) {
  ModelSpec spec;
  spec.name = name;
  spec.in_channels = channels;
  spec.num_classes = classes;
  spec.image_size = size;
  spec.small_input = small_input;
  return spec;
}

int64_t params_of(const ModelSpec& spec) {
  const int64_t n = count_parameters(*make_model(spec));
  std::cout << "[ params   ] " << spec.name << " (" << spec.in_channels << " ch, "
            << spec.num_classes << " classes) = " << n << "\n";
  return n;
}

bool is_imagenet_resnet(const std::string& name) {
  return name == "resnet18" || name == "resnet34" || name == "resnet50";
}

// Small inputs so the whole zoo runs in seconds: 1x28x28 (Fashion-MNIST) for the CIFAR
// ResNets and VGG; 3x32x32 for the ImageNet ResNets, resnet18 with the small-input stem and the
// bigger two with the standard stem (which shrinks 32x32 to 8x8 before layer1).
ModelSpec small_spec(const std::string& name) {
  if (!is_imagenet_resnet(name)) return spec_for(name, 1, 10, 28);
  return spec_for(name, 3, 10, 32, /*small_input=*/name == "resnet18");
}

bool has_parameter(const Model& model, const std::string& key) {
  return model.named_parameters(/*recurse=*/true).find(key) != nullptr;
}

TEST(ModelsTest, CifarResNetParameterCountsMatchThePaper) {
  // Option-A shortcuts carry no parameters, so each extra block per stage (n -> n + 1) adds two
  // conv+BN pairs per stage: 2 * (2304 + 32) + 2 * (9216 + 64) + 2 * (36864 + 128) = 97,216.
  // resnet20 (n = 3) = 269,722; resnet110 (n = 18) = 269,722 + 15 * 97,216 = 1,727,962.
  // (1,730,714, sometimes quoted for resnet110, is 2,752 more: the option-B 1x1 projection
  // shortcuts 16->32 and 32->64 with their BN, which the paper's CIFAR models do not use.)
  constexpr int64_t kResNet20 = 269722;
  constexpr int64_t kPerExtraBlock = 97216;
  EXPECT_EQ(params_of(spec_for("resnet20", 3, 10, 32)), kResNet20);
  EXPECT_EQ(params_of(spec_for("resnet32", 3, 10, 32)), kResNet20 + 2 * kPerExtraBlock);
  EXPECT_EQ(params_of(spec_for("resnet44", 3, 10, 32)), kResNet20 + 4 * kPerExtraBlock);
  EXPECT_EQ(params_of(spec_for("resnet56", 3, 10, 32)), kResNet20 + 6 * kPerExtraBlock);
  EXPECT_EQ(params_of(spec_for("resnet110", 3, 10, 32)), 1727962);
}

TEST(ModelsTest, LeNet5HasTheClassicCount) {
  // conv1 156 + conv2 2,416 + fc1 48,120 + fc2 10,164 + fc3 850 = 61,706 (LeCun et al. 1998).
  EXPECT_EQ(params_of(spec_for("lenet5", 1, 10, 28)), 61706);
  EXPECT_EQ(params_of(spec_for("lenet5", 1, 10, 32)), 61706);
}

TEST(ModelsTest, ImageNetResNetParameterCountsMatchTorchvision) {
  EXPECT_EQ(params_of(spec_for("resnet18", 3, 1000, 224)), 11689512);
  EXPECT_EQ(params_of(spec_for("resnet34", 3, 1000, 224)), 21797672);
  EXPECT_EQ(params_of(spec_for("resnet50", 3, 1000, 224)), 25557032);
}

TEST(ModelsTest, SmallInputStemOnlyShrinksTheFirstConv) {
  // 7x7x3x64 stem replaced by 3x3x3x64: 9408 - 1728 fewer parameters.
  EXPECT_EQ(params_of(spec_for("resnet18", 3, 10, 32)) -
                params_of(spec_for("resnet18", 3, 10, 32, /*small_input=*/true)),
            9408 - 1728);
}

TEST(ModelsTest, VggClassifierFollowsImageSize) {
  // The classifier is Linear(512 * s * s, classes) with s = max(1, image_size / 32).
  const int64_t at32 = params_of(spec_for("vgg11", 3, 10, 32));
  const int64_t at64 = params_of(spec_for("vgg11", 3, 10, 64));
  EXPECT_EQ(at64 - at32, 512 * 3 * 10);
  EXPECT_EQ(params_of(spec_for("vgg11", 3, 10, 28)), at32);
}

TEST(ModelsTest, CatalogIsOrderedUniqueAndDescribed) {
  const auto& catalog = model_catalog();
  ASSERT_EQ(catalog.size(), 15u);
  EXPECT_EQ(catalog.front().name, "resnet20");
  EXPECT_EQ(catalog.back().name, "logistic");
  std::set<std::string> names;
  for (const ModelInfo& info : catalog) {
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate " << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
  }
}

TEST(ModelsTest, UnknownNameIsRejectedWithTheKnownNames) {
  try {
    make_model(spec_for("resnet21", 3, 10, 32));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'resnet21'"), std::string::npos) << what;
    EXPECT_NE(what.find("resnet20, resnet32"), std::string::npos) << what;
    EXPECT_NE(what.find("vgg19"), std::string::npos) << what;
  }
}

TEST(ModelsTest, NonPositiveSpecFieldsAreRejected) {
  EXPECT_THROW(make_model(spec_for("resnet20", 0, 10, 32)), std::invalid_argument);
  EXPECT_THROW(make_model(spec_for("vgg11", 3, 0, 32)), std::invalid_argument);
  EXPECT_THROW(make_model(spec_for("resnet18", 3, 10, -1)), std::invalid_argument);
}

TEST(ModelsTest, ParameterNamesAreMeaningful) {
  const auto cifar = make_model(spec_for("resnet20", 3, 10, 32));
  EXPECT_TRUE(has_parameter(*cifar, "conv1.weight"));
  EXPECT_TRUE(has_parameter(*cifar, "layer1.0.conv1.weight"));
  EXPECT_TRUE(has_parameter(*cifar, "layer3.2.bn2.bias"));
  EXPECT_TRUE(has_parameter(*cifar, "fc.weight"));
  EXPECT_FALSE(has_parameter(*cifar, "layer2.0.downsample.0.weight"));  // option A: no params

  const auto resnet = make_model(spec_for("resnet50", 3, 1000, 224));
  EXPECT_TRUE(has_parameter(*resnet, "layer1.0.conv3.weight"));
  EXPECT_TRUE(has_parameter(*resnet, "layer1.0.downsample.0.weight"));
  EXPECT_TRUE(has_parameter(*resnet, "layer4.2.bn3.weight"));
  EXPECT_TRUE(resnet->named_buffers(true).find("layer2.0.downsample.1.running_mean") != nullptr);

  const auto vgg = make_model(spec_for("vgg16", 3, 10, 32));
  EXPECT_TRUE(has_parameter(*vgg, "features.0.weight"));
  EXPECT_TRUE(has_parameter(*vgg, "features.1.weight"));  // BN after the first conv
  EXPECT_TRUE(has_parameter(*vgg, "classifier.weight"));
}

class EveryModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryModelTest, ForwardShapeAndGradientForEveryParameter) {
  torch::manual_seed(0);
  const ModelSpec spec = small_spec(GetParam());
  const auto model = make_model(spec);
  model->train();
  const int64_t batch = 2;
  const torch::Tensor x = torch::randn({batch, spec.in_channels, spec.image_size, spec.image_size});
  const torch::Tensor y = model->forward(x);
  // The convex models (linear, logistic) output one value per sample and take real targets.
  const bool convex = GetParam() == "linear" || GetParam() == "logistic";
  const std::vector<int64_t> shape =
      convex ? std::vector<int64_t>{batch} : std::vector<int64_t>{batch, spec.num_classes};
  ASSERT_EQ(y.sizes(), shape);
  EXPECT_TRUE(torch::isfinite(y).all().item<bool>());

  (convex ? model->loss(y, torch::tensor({1.0f, -1.0f}))
          : torch::nn::functional::cross_entropy(y, torch::tensor({1, 7}, torch::kLong)))
      .backward();
  for (const auto& p : model->named_parameters(/*recurse=*/true)) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key() << " has no gradient";
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key() << " gradient is 0";
  }

  model->eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(model->forward(x).sizes(), shape);
}

std::vector<std::string> catalog_names() {
  std::vector<std::string> names;
  for (const ModelInfo& info : model_catalog()) names.push_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Zoo, EveryModelTest, ::testing::ValuesIn(catalog_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace cedar
