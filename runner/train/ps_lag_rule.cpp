#include "runner/train/ps_lag_rule.h"

#include <ATen/ATen.h>

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

}  // namespace cedar
