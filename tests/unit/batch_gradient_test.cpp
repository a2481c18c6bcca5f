// The trainer's second gradient pass (StepContext::batch_gradient_at,
// runner/train/batch_gradient.h) that LASG-WK2 asks for: on a ResNet-20 with batch norm, the
// gradient it returns at other parameters equals one computed independently by a fresh model at
// those parameters on the same batch, and the model, its buffers and its .grad are left bit for bit
// as they were; through the whole Trainer, an algorithm that asks for it at every step gets the
// gradient of that step's batch, the step's own gradient at the current parameters, and the passes
// counted in its stats, while the training trajectory stays bit for bit that of a run without them;
// train.overlap is refused for such an algorithm.
#include "runner/train/batch_gradient.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"
#include "comm/run_network_profiles.h"
#include "config/params.h"
#include "datasets/loader.h"
#include "runner/train/trainer.h"
#include "tests/mpi/synthetic_training.h"

namespace cedar {
namespace {

std::vector<NamedTensor> named(torch::OrderedDict<std::string, torch::Tensor> dict) {
  std::vector<NamedTensor> out;
  for (auto& item : dict) out.push_back({item.key(), item.value()});
  return out;
}

std::vector<at::Tensor> clones(const std::vector<NamedTensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.tensor.detach().clone());
  return out;
}

std::vector<at::Tensor> grads_of(const std::vector<NamedTensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.tensor.grad().clone());
  return out;
}

bool all_equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

// The gradient of `model` (a fresh one, its parameters set to `at`, its buffers to `buffers`) on
// one batch: the independent computation the pass is checked against.
std::vector<at::Tensor> independent_gradient(Model& model, const std::vector<at::Tensor>& at,
                                             const std::vector<at::Tensor>& buffers,
                                             const Batch& batch) {
  auto params = named(model.named_parameters());
  auto bufs = named(model.named_buffers());
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) params[i].tensor.copy_(at[i]);
    for (size_t i = 0; i < bufs.size(); ++i) bufs[i].tensor.copy_(buffers[i]);
  }
  model.train();
  model.zero_grad();
  model.loss(model.forward(batch.images), batch.labels).backward();
  return grads_of(params);
}

TEST(BatchGradient, EqualsAnIndependentGradientAndLeavesTheModelAsItWas) {
  auto t = testing::synthetic_resnet20(1, 64, 16, 3);
  auto fresh = testing::synthetic_resnet20(1, 64, 16, 4).model;  // other initial weights
  ShardedLoader loader(t.data.train, t.data.norm, Augmentation{}, 8, 0, 1, 1, true, true);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  Model& model = *t.model;
  const auto params = named(model.named_parameters());
  const auto buffers = named(model.named_buffers());
  model.train();
  model.zero_grad();
  model.loss(model.forward(batch.images), batch.labels).backward();  // the step's own pass

  const auto values = clones(params), grads = grads_of(params), buffer_values = clones(buffers);
  std::vector<at::Tensor> elsewhere;
  for (const auto& v : values) elsewhere.push_back(v + 0.05 * torch::randn_like(v));
  const auto second = batch_gradient_at(
      {&model, &params, &buffers, batch.images, batch.labels, std::nullopt, 1.0}, elsewhere);

  EXPECT_TRUE(all_equal(clones(params), values)) << "the parameters changed";
  EXPECT_TRUE(all_equal(grads_of(params), grads)) << "the step's .grad changed";
  EXPECT_TRUE(all_equal(clones(buffers), buffer_values)) << "the batch-norm statistics changed";
  const auto expected = independent_gradient(*fresh, elsewhere, buffer_values, batch);
  ASSERT_EQ(second.size(), expected.size());
  for (size_t i = 0; i < second.size(); ++i)
    EXPECT_TRUE(torch::equal(second[i], expected[i])) << params[i].name;
  EXPECT_FALSE(all_equal(second, grads)) << "other parameters, another gradient";
  // At the current parameters: the step's own gradient.
  EXPECT_TRUE(all_equal(
      batch_gradient_at({&model, &params, &buffers, batch.images, batch.labels, std::nullopt, 1.0},
                        values),
      grads));
  EXPECT_THROW(
      batch_gradient_at({&model, &params, &buffers, batch.images, batch.labels, std::nullopt, 1.0},
                        {values[0]}),
      std::invalid_argument);
}

// On one rank, leaves each step's gradient as the update (dense SGD on one rank). With `ask`, it
// asks at every step for the batch's gradient at the initial parameters and at the current ones.
class SecondPassProbe final : public Algorithm {
 public:
  explicit SecondPassProbe(bool ask) : ask_(ask) {}
  void setup(const std::vector<NamedTensor>& params, Communicator&) override {
    params_ = params;
    initial = clones(params);
  }
  void reduce_gradients(GradBucket& bucket, Communicator&, StepContext& ctx) override {
    if (!ask_) return;
    ASSERT_TRUE(ctx.batch_gradient_at) << "the trainer offers no second pass";
    ASSERT_EQ(bucket.entries.size(), params_.size()) << "one bucket expected";
    const at::Tensor flat = bucket.flat.clone();
    const auto current = clones(params_);
    at_initial.push_back(ctx.batch_gradient_at(initial));
    const auto at_current = ctx.batch_gradient_at(current);
    bool same = true;
    for (const auto& e : bucket.entries)
      for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].name == e.name) same = same && torch::equal(e.grad, at_current[i]);
    current_is_the_steps_gradient.push_back(same);
    EXPECT_TRUE(torch::equal(bucket.flat, flat)) << "the pass changed the step's gradients";
    EXPECT_TRUE(all_equal(clones(params_), current)) << "the pass changed the parameters";
    passes.push_back(ctx.stats.at("second_passes"));
    EXPECT_GT(ctx.stats.at("second_pass_seconds"), 0.0);
  }
  bool uses_batch_gradient_at() const override { return ask_; }

  std::vector<at::Tensor> initial;
  std::vector<std::vector<at::Tensor>> at_initial;
  std::vector<bool> current_is_the_steps_gradient;
  std::vector<double> passes;

 private:
  bool ask_;
  std::vector<NamedTensor> params_;
};

constexpr int64_t kSteps = 4;

testing::SyntheticTraining probe_setting() {
  auto t = testing::synthetic_resnet20(kSteps, 64, 16, 3);
  t.cfg.algorithm = "probe";
  t.cfg.data.augment = false;
  t.cfg.data.prefetch = 0;
  t.cfg.train.bucket_mb = 64;  // one bucket
  t.cfg.optimizer.momentum = 0;
  t.cfg.optimizer.weight_decay = 0;
  return t;
}

TEST(BatchGradient, TheTrainerOffersTheStepsBatchAtOtherParameters) {
  auto t = probe_setting();
  const auto initial_buffers = clones(named(t.model->named_buffers()));
  auto owned = std::make_unique<SecondPassProbe>(true);
  SecondPassProbe& probe = *owned;
  LocalCommunicator local;
  MeteredCommunicator comm(local);
  std::vector<at::Tensor> asked_params;
  {
    Trainer trainer(t.cfg, run_network_profiles(t.cfg), t.model, t.data, std::move(owned), comm,
                    local, nullptr, -1, torch::Device(torch::kCPU), true);
    // The probe lives in the trainer; read what it recorded before the trainer goes.
    trainer.run();
    asked_params = clones(named(t.model->named_parameters()));
    ASSERT_EQ(probe.at_initial.size(), static_cast<size_t>(kSteps));
    ShardedLoader loader(t.data.train, t.data.norm, Augmentation{}, t.cfg.train.batch_size, 0, 1,
                         t.cfg.train.seed, true, true);
    auto fresh = testing::synthetic_resnet20(1, 64, 16, 4).model;
    for (int64_t k = 0; k < kSteps; ++k) {
      Batch batch;
      ASSERT_TRUE(loader.next(batch));
      const auto expected = independent_gradient(*fresh, probe.initial, initial_buffers, batch);
      EXPECT_TRUE(all_equal(probe.at_initial[static_cast<size_t>(k)], expected)) << "step " << k;
      EXPECT_TRUE(probe.current_is_the_steps_gradient[static_cast<size_t>(k)]) << "step " << k;
      EXPECT_EQ(probe.passes[static_cast<size_t>(k)], 2) << "step " << k;
    }
  }
  // The same run without the passes ends at the same parameters, bit for bit.
  auto u = probe_setting();
  {
    LocalCommunicator local2;
    MeteredCommunicator comm2(local2);
    Trainer trainer(u.cfg, run_network_profiles(u.cfg), u.model, u.data,
                    std::make_unique<SecondPassProbe>(false), comm2, local2, nullptr, -1,
                    torch::Device(torch::kCPU), true);
    trainer.run();
  }
  EXPECT_TRUE(all_equal(clones(named(u.model->named_parameters())), asked_params));
}

TEST(BatchGradient, TrainOverlapIsRefusedForAnAlgorithmThatAsks) {
  auto t = probe_setting();
  t.cfg.train.overlap = true;
  LocalCommunicator local;
  MeteredCommunicator comm(local);
  Trainer trainer(t.cfg, run_network_profiles(t.cfg), t.model, t.data,
                  std::make_unique<SecondPassProbe>(true), comm, local, nullptr, -1,
                  torch::Device(torch::kCPU), true);
  try {
    trainer.run();
    FAIL() << "train.overlap was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("train.overlap"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cedar
