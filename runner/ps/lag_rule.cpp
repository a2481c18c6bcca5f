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

void LagUploadRule::moved(double squared_move, double lr) {
  moves_.push_front(lr > 0 ? squared_move / (lr * lr) : 0.0);
  if (static_cast<int64_t>(moves_.size()) > history_) moves_.pop_back();
}

double LagUploadRule::threshold() const {
  double sum = 0;
  for (double m : moves_) sum += m;
  return xi_ / double(history_) * sum;
}

bool LagUploadRule::upload(const std::vector<at::Tensor>& grads) {
  const bool first = last_.empty();
  if (!first && squared_distance(grads, last_) <= threshold()) return false;
  last_.clear();
  for (const auto& g : grads) last_.push_back(g.detach().clone());
  return true;
}

void LagUploadRule::save(TensorMap& state, const std::string& prefix) const {
  state[prefix + "moves"] = at::tensor(
      at::ArrayRef<double>(std::vector<double>(moves_.begin(), moves_.end())), at::kDouble);
  for (size_t i = 0; i < last_.size(); ++i)
    state[prefix + "last." + std::to_string(i)] = last_[i].cpu().clone();
}

void LagUploadRule::restore(const TensorMap& state, const std::string& prefix) {
  const at::Tensor moves = need(state, prefix + "moves").contiguous();
  if (moves.scalar_type() != at::kDouble || moves.numel() > history_)
    throw std::runtime_error("checkpoint: '" + prefix + "moves' is not at most " +
                             std::to_string(history_) + " doubles (another history?)");
  moves_.assign(moves.data_ptr<double>(), moves.data_ptr<double>() + moves.numel());
  last_.clear();
  for (size_t i = 0;; ++i) {
    auto it = state.find(prefix + "last." + std::to_string(i));
    if (it == state.end()) break;
    last_.push_back(it->second.clone());
  }
}

}  // namespace cedar
