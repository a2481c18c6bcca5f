// Cedar's SGD against torch::optim::SGD (the PyTorch rule), and gradient bucketing.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runner/buckets.h"
#include "runner/optimizer.h"

namespace cedar {
namespace {

TEST(Sgd, MatchesTorchOptimSgdStepByStep) {
  for (bool nesterov : {false, true}) {
    torch::manual_seed(3);
    auto w_ref = torch::randn({4, 3}).requires_grad_(true);
    auto w = w_ref.detach().clone();
    OptimizerConfig cfg;
    cfg.momentum = 0.9;
    cfg.weight_decay = 1e-2;
    cfg.nesterov = nesterov;
    auto g = torch::zeros_like(w);
    SgdOptimizer mine({w}, {g}, cfg, true);
    torch::optim::SGD ref({w_ref}, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-2).nesterov(nesterov));
    for (int s = 0; s < 5; ++s) {
      auto grad = torch::randn({4, 3});
      w_ref.mutable_grad() = grad.clone();
      ref.step();
      g.copy_(grad);
      mine.step(0.1);
      EXPECT_TRUE(torch::allclose(w, w_ref.detach(), 1e-6, 1e-7)) << "step " << s;
    }
  }
}

TEST(Sgd, WithoutMomentumIsPlainGradientStep) {
  auto w = torch::ones({3});
  auto g = torch::full({3}, 2.0f);
  OptimizerConfig cfg;
  cfg.weight_decay = 0;
  SgdOptimizer opt({w}, {g}, cfg, false);
  opt.step(0.5);
  opt.step(0.5);
  EXPECT_TRUE(torch::allclose(w, torch::full({3}, -1.0f)));
}

TEST(Buckets, ReverseOrderSizeLimitAndViews) {
  std::vector<NamedTensor> params = {{"a", torch::zeros({10})}, {"b", torch::zeros({20})},
                                     {"c", torch::zeros({30})}};
  EXPECT_EQ(make_buckets(params, 100 * 4).size(), 1u);  // 60 floats fit in one bucket
  auto small = make_buckets(params, 40 * 4);
  ASSERT_EQ(small.size(), 2u);  // [c] (30), [b, a] (30)
  EXPECT_EQ(small[0].entries[0].name, "c");
  EXPECT_EQ(small[1].entries[0].name, "b");
  EXPECT_EQ(small[1].entries[1].name, "a");
  for (auto& p : params) p.tensor.mutable_grad() = torch::full_like(p.tensor, float(p.tensor.numel()));
  gather_gradients(small);
  EXPECT_FLOAT_EQ(small[1].flat[0].item<float>(), 20.0f);
  EXPECT_FLOAT_EQ(small[1].flat[25].item<float>(), 10.0f);
  small[1].entries[1].grad.fill_(7);  // writes through to the flat buffer
  EXPECT_FLOAT_EQ(small[1].flat[29].item<float>(), 7.0f);
}

}  // namespace
}  // namespace cedar
