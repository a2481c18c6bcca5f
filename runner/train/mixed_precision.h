#pragma once
// Automatic mixed precision (train.amp): the forward pass under LibTorch's autocast in bf16 or
// fp16, and for fp16 the dynamic loss scaling of torch.amp.GradScaler with PyTorch's defaults
// (initial scale 2^16, growth x2 after 2000 steps without inf/NaN, backoff x0.5 on each step
// with one), computed by the same ATen kernels GradScaler calls.
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <vector>

#include "runner/train/checkpoint.h"

namespace cedar {

// train.amp's value as the autocast dtype: off -> none, bf16 -> BFloat16, fp16 -> Half.
std::optional<at::ScalarType> amp_dtype(const std::string& amp);

// Autocast for one device type in one scope, as Python's `with torch.autocast(...)`: enabled with
// `dtype` (nothing happens without one) and the previous state restored on exit, with the cache
// of cast weights cleared when the outermost scope ends. Autocast is per thread.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, std::optional<at::ScalarType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool active_ = false;
  bool was_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

// fp16: a step skipped for inf/NaN gradients at a loss scale this low or lower means the run
// diverged. From the initial 2^16 the scale gets there only after at least 16 skipped steps (more
// where steps without overflow grew it in between); at a scale of 1 the gradients are not finite
// even unscaled, which no further backoff fixes.
constexpr double kDivergedLossScale = 1.0;

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

// The loss scale of fp16 training: the loss is multiplied by it before backward so that small
// gradients do not flush to zero in fp16, and the gradients are divided by it before they are
// used. A step whose gradients hold inf/NaN is skipped by the caller and the scale backs off;
// after growth_interval steps in a row without one it grows.
class LossScaler {
 public:
  explicit LossScaler(c10::Device device, LossScalerOptions options = {});

  // The loss times the current scale (what backward starts from).
  at::Tensor scale(const at::Tensor& loss) const;
  // Multiplies every gradient by 1/scale in place (the reciprocal taken in fp64, as GradScaler
  // does); true when any of them holds inf or NaN.
  bool unscale(const std::vector<at::Tensor>& grads);
  // After the step: backoff when `found_inf` (the same on every rank), else count towards growth.
  void update(bool found_inf);

  double scale_value() const;
  int64_t growth_tracker() const;

  // Checkpoints: "amp.scale" (fp32) and "amp.growth_tracker" (int32).
  void save(TensorMap& state) const;
  // Throws naming the key when the checkpoint lacks one (written by a run without fp16).
  void load(const TensorMap& state);

 private:
  LossScalerOptions options_;
  at::Tensor scale_;           // 1 fp32 element on the gradients' device
  at::Tensor growth_tracker_;  // 1 int32 element: steps since the last backoff or growth
};

}  // namespace cedar
