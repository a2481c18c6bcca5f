#include "runner/ps/worker_buffers.h"

#include <ATen/ATen.h>

#include <stdexcept>

#include "runner/train/checkpoint_state.h"

namespace cedar {

WorkerBuffers::WorkerBuffers(Model& model, int workers) {
  const at::Tensor initial = pack(model);
  words_ = initial.numel();
  for (int w = 0; w < workers; ++w) latest_.push_back(initial.clone());
}

at::Tensor WorkerBuffers::pack(Model& model) {
  std::vector<at::Tensor> flat;
  for (const auto& b : model.buffers()) flat.push_back(b.detach().reshape({-1}).to(at::kDouble));
  return flat.empty() ? at::empty({0}, at::kDouble) : at::cat(flat);
}

void WorkerBuffers::receive(int worker, const double* words) {
  at::Tensor& t = latest_.at(static_cast<size_t>(worker));
  std::copy(words, words + words_, t.data_ptr<double>());
}

void WorkerBuffers::average_into(Model& model) const {
  at::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& b : model.buffers()) {
    const int64_t n = b.numel();
    auto of = [&](size_t w) {
      return latest_[w].narrow(0, offset, n).to(b.scalar_type()).view(b.sizes());
    };
    if (at::isFloatingType(b.scalar_type())) {
      at::Tensor sum = of(0).clone();
      for (size_t w = 1; w < latest_.size(); ++w) sum.add_(of(w));
      if (latest_.size() > 1) sum.div_(static_cast<double>(latest_.size()));
      b.copy_(sum);
    } else {
      b.copy_(of(0));
    }
    offset += n;
  }
}

void WorkerBuffers::save(TensorMap& state, const std::string& prefix) const {
  if (words_ == 0) return;  // a model without buffers: its checkpoints stay as they were
  for (size_t w = 0; w < latest_.size(); ++w)
    state[prefix + std::to_string(w)] = latest_[w].clone();
}

void WorkerBuffers::restore(const TensorMap& state, const std::string& prefix) {
  if (words_ == 0) return;
  for (size_t w = 0; w < latest_.size(); ++w) {
    const std::string key = prefix + std::to_string(w);
    const at::Tensor& t = need(state, key);
    if (t.scalar_type() != at::kDouble || t.numel() != words_)
      throw std::runtime_error("checkpoint: '" + key + "' does not hold the " +
                               std::to_string(words_) + " doubles of the model's buffers");
    latest_[w].copy_(t.reshape({-1}));
  }
}

}  // namespace cedar
