#include "runner/train/batch_gradient.h"

#include <torch/torch.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "comm/device_stream.h"
#include "runner/train/mixed_precision.h"

namespace cedar {
namespace {

// The parameters' values and .grad and the buffers' values of the model, put back when it goes
// out of scope (also when the pass throws).
class RestoredModel {
 public:
  RestoredModel(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>& buffers)
      : params_(params), buffers_(buffers) {
    torch::NoGradGuard no_grad;
    for (const auto& p : params_) {
      values_.push_back(p.tensor.detach().clone());
      grads_.push_back(p.tensor.grad());
      at::Tensor(p.tensor).mutable_grad() = at::Tensor();
    }
    for (const auto& b : buffers_) buffer_values_.push_back(b.tensor.detach().clone());
  }
  ~RestoredModel() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      at::Tensor p = params_[i].tensor;
      p.detach().copy_(values_[i]);
      p.mutable_grad() = grads_[i];
    }
    for (size_t i = 0; i < buffers_.size(); ++i)
      buffers_[i].tensor.detach().copy_(buffer_values_[i]);
  }
  RestoredModel(const RestoredModel&) = delete;
  RestoredModel& operator=(const RestoredModel&) = delete;

 private:
  const std::vector<NamedTensor>& params_;
  const std::vector<NamedTensor>& buffers_;
  std::vector<at::Tensor> values_, grads_, buffer_values_;
};

}  // namespace

std::vector<at::Tensor> batch_gradient_at(const BatchGradientPass& pass,
                                          const std::vector<at::Tensor>& at) {
  const std::vector<NamedTensor>& params = *pass.params;
  if (at.size() != params.size())
    throw std::invalid_argument("second gradient pass: " + std::to_string(at.size()) +
                                " parameter tensors for a model of " +
                                std::to_string(params.size()));
  for (size_t i = 0; i < at.size(); ++i)
    if (!at[i].defined() || at[i].sizes() != params[i].tensor.sizes())
      throw std::invalid_argument("second gradient pass: the tensor for " + params[i].name +
                                  " does not have the parameter's shape");
  std::vector<at::Tensor> grads;
  {
    RestoredModel restore(params, *pass.buffers);
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < at.size(); ++i) params[i].tensor.detach().copy_(at[i]);
    }
    torch::AutoGradMode grad_mode(true);
    at::Tensor loss;
    {
      AutocastGuard autocast(pass.images.device().type(), pass.amp_dtype);
      loss = pass.model->loss(pass.model->forward(pass.images), pass.labels);
    }
    (pass.loss_scale != 1 ? loss * pass.loss_scale : loss).backward();
    for (const auto& p : params) {
      const at::Tensor& g = p.tensor.grad();
      at::Tensor out =
          g.defined() ? g.detach().to(at::kFloat) : at::zeros_like(p.tensor, at::kFloat);
      if (pass.loss_scale != 1) out = out.mul(1.0 / pass.loss_scale);
      grads.push_back(out);
    }
  }
  return grads;
}

BatchGradientAt offered_batch_gradient(BatchGradientPass pass, StepContext& ctx) {
  ctx.stats["second_passes"] = 0;
  ctx.stats["second_pass_seconds"] = 0;
  return [pass = std::move(pass), &ctx](const std::vector<at::Tensor>& at) {
    const c10::Device device = pass.images.device();
    wait_for_device(device);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<at::Tensor> grads = batch_gradient_at(pass, at);
    wait_for_device(device);
    ctx.stats["second_passes"] += 1;
    ctx.stats["second_pass_seconds"] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return grads;
  };
}

}  // namespace cedar
