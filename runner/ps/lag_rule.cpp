#include "runner/ps/lag_rule.h"

#include <ATen/ATen.h>

#include "runner/train/checkpoint_state.h"

namespace cedar {

double squared_distance(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += (a[i].detach().to(at::kDouble) - b[i].detach().to(at::kDouble))
               .square()
               .sum()
               .item<double>();
  return sum;
}

bool LagUploadRule::upload(const std::vector<at::Tensor>& grads) {
  const bool first = last_.empty();
  if (!first && squared_distance(grads, last_) <= threshold()) return false;
  last_.clear();
  for (const auto& g : grads) last_.push_back(g.detach().clone());
  return true;
}

void LagUploadRule::save(TensorMap& state, const std::string& prefix) const {
  const std::vector<double> moves = threshold_.moves();
  state[prefix + "moves"] = at::tensor(at::ArrayRef<double>(moves), at::kDouble);
  for (size_t i = 0; i < last_.size(); ++i)
    state[prefix + "last." + std::to_string(i)] = last_[i].cpu().clone();
}

void LagUploadRule::restore(const TensorMap& state, const std::string& prefix) {
  const at::Tensor moves = need(state, prefix + "moves").contiguous();
  if (moves.scalar_type() != at::kDouble)
    throw std::runtime_error("checkpoint: '" + prefix + "moves' is not doubles");
  threshold_.set_moves(
      std::vector<double>(moves.data_ptr<double>(), moves.data_ptr<double>() + moves.numel()));
  last_.clear();
  for (size_t i = 0;; ++i) {
    auto it = state.find(prefix + "last." + std::to_string(i));
    if (it == state.end()) break;
    last_.push_back(it->second.clone());
  }
}

}  // namespace cedar
