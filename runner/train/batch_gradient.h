#pragma once
// A second gradient of the step's minibatch (Algorithm::uses_batch_gradient_at): the same batch
// through the model's forward and backward at other parameters, as LASG-WK2 (algorithms/lasg.cpp)
// compares the gradients of one minibatch at the current and at a saved parameter vector. The
// model, its buffers (batch-norm statistics) and its parameters' .grad are left as they were, so
// the step's own gradients, update and trajectory do not change.
#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

#include "algorithms/algorithm.h"
#include "models/model.h"

namespace cedar {

// What a second pass needs of the step.
struct BatchGradientPass {
  Model* model = nullptr;
  const std::vector<NamedTensor>* params = nullptr;   // the model's parameters, model order
  const std::vector<NamedTensor>* buffers = nullptr;  // and its buffers
  at::Tensor images, labels;                          // the step's minibatch, on the model's device
  std::optional<at::ScalarType> amp_dtype;            // the forward pass's autocast (train.amp)
  double loss_scale = 1;  // fp16: backward from the loss times this, the gradients divided by it
};

// The gradient of pass's minibatch at parameters `at` (one tensor per parameter, their shapes, in
// model order): forward (in training mode, under the step's autocast), the model's loss, backward.
// One fp32 tensor per parameter (zeros where a parameter gets no gradient). Throws
// std::invalid_argument naming the parameter whose tensor does not fit.
std::vector<at::Tensor> batch_gradient_at(const BatchGradientPass& pass,
                                          const std::vector<at::Tensor>& at);

// What the trainer offers in StepContext::batch_gradient_at: batch_gradient_at(pass, ·), each
// call counted in ctx.stats "second_passes" and its seconds (the device's queue drained at both
// ends) in "second_pass_seconds"; both are set to 0 here.
BatchGradientAt offered_batch_gradient(BatchGradientPass pass, StepContext& ctx);

}  // namespace cedar
