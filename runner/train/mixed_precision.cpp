#include "runner/train/mixed_precision.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <stdexcept>

#include "runner/train/checkpoint_state.h"

namespace cedar {

std::optional<at::ScalarType> amp_dtype(const std::string& amp) {
  if (amp == "off") return std::nullopt;
  if (amp == "bf16") return at::kBFloat16;
  if (amp == "fp16") return at::kHalf;
  throw std::invalid_argument("train.amp: '" + amp + "' is not one of off|bf16|fp16");
}

AutocastGuard::AutocastGuard(c10::DeviceType device, std::optional<at::ScalarType> dtype)
    : device_(device), active_(dtype.has_value()) {
  if (!active_) return;
  was_enabled_ = at::autocast::is_autocast_enabled(device_);
  previous_dtype_ = at::autocast::get_autocast_dtype(device_);
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, *dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, was_enabled_);
  at::autocast::set_autocast_dtype(device_, previous_dtype_);
}

LossScaler::LossScaler(c10::Device device, LossScalerOptions options)
    : options_(options),
      scale_(torch::full({1}, options.init_scale, torch::dtype(torch::kFloat).device(device))),
      growth_tracker_(torch::zeros({1}, torch::dtype(torch::kInt).device(device))) {}

at::Tensor LossScaler::scale(const at::Tensor& loss) const { return loss * scale_; }

bool LossScaler::unscale(const std::vector<at::Tensor>& grads) {
  auto found_inf = torch::zeros({1}, scale_.options());
  const auto inv_scale = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  return found_inf.item<float>() != 0;
}

void LossScaler::update(bool found_inf) {
  const auto inf = torch::full({1}, found_inf ? 1.0 : 0.0, scale_.options());
  at::_amp_update_scale_(scale_, growth_tracker_, inf, options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
}

double LossScaler::scale_value() const { return scale_.item<double>(); }

int64_t LossScaler::growth_tracker() const { return growth_tracker_.item<int64_t>(); }

void LossScaler::save(TensorMap& state) const {
  state["amp.scale"] = scale_.cpu().clone();
  state["amp.growth_tracker"] = growth_tracker_.cpu().clone();
}

void LossScaler::load(const TensorMap& state) {
  const at::Tensor& scale = need(state, "amp.scale");
  const at::Tensor& tracker = need(state, "amp.growth_tracker");
  if (scale.scalar_type() != at::kFloat || tracker.scalar_type() != at::kInt)
    throw std::runtime_error("checkpoint: amp.scale / amp.growth_tracker have the wrong dtype");
  copy_into(scale_, scale, "amp.scale");
  copy_into(growth_tracker_, tracker, "amp.growth_tracker");
}

}  // namespace cedar
