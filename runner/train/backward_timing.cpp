#include "runner/train/backward_timing.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace cedar {

std::vector<double> gradient_ready_seconds(const std::vector<NamedTensor>& params,
                                           const std::function<at::Tensor()>& forward_loss,
                                           int warmup, int measured) {
  if (measured < 1) throw std::invalid_argument("backward timing: no measured pass");
  using Clock = std::chrono::steady_clock;
  const size_t n = params.size();
  Clock::time_point start;
  std::vector<double> arrival(n, -1);
  std::vector<unsigned> hooks;
  for (size_t i = 0; i < n; ++i) {
    at::Tensor p = params[i].tensor;
    hooks.push_back(p.register_hook([&arrival, &start, i](const at::Tensor&) {
      if (arrival[i] < 0) arrival[i] = std::chrono::duration<double>(Clock::now() - start).count();
    }));
  }
  std::vector<std::vector<double>> passes;
  auto clear_grads = [&] {
    for (const auto& p : params) p.tensor.mutable_grad() = at::Tensor();
  };
  try {
    for (int pass = 0; pass < warmup + measured; ++pass) {
      clear_grads();
      const at::Tensor loss = forward_loss();
      std::fill(arrival.begin(), arrival.end(), -1.0);
      start = Clock::now();
      loss.backward();
      const double end = std::chrono::duration<double>(Clock::now() - start).count();
      for (double& a : arrival)
        if (a < 0) a = end;
      if (pass >= warmup) passes.push_back(arrival);
    }
  } catch (...) {
    for (size_t i = 0; i < n; ++i) params[i].tensor.remove_hook(hooks[i]);
    clear_grads();
    throw;
  }
  for (size_t i = 0; i < n; ++i) params[i].tensor.remove_hook(hooks[i]);
  clear_grads();
  std::vector<double> median(n);
  std::vector<double> column(passes.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < passes.size(); ++k) column[k] = passes[k][i];
    std::nth_element(column.begin(), column.begin() + column.size() / 2, column.end());
    median[i] = column[column.size() / 2];
  }
  return median;
}

}  // namespace cedar
