// Trainer checkpoints: what one rank saves and restores so that a resumed run computes exactly
// what the uninterrupted run would have (bitwise on CPU with one thread per rank).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cstring>
#include <stdexcept>

#include "runner/train/optimizer.h"
#include "runner/train/trainer.h"

namespace cedar {
namespace {

at::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const at::Tensor& t) {
  auto c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()),
                     static_cast<size_t>(c.numel()));
}

const at::Tensor& need(const TensorMap& state, const std::string& key) {
  auto it = state.find(key);
  if (it == state.end())
    throw std::runtime_error("checkpoint: no '" + key +
                             "' (written by a different model or configuration?)");
  return it->second;
}

// Copies a saved tensor into a live one, checking that the shapes agree.
void copy_into(const at::Tensor& dst, const at::Tensor& src, const std::string& key) {
  if (!dst.sizes().equals(src.sizes()))
    throw std::runtime_error("checkpoint: '" + key + "' has shape " + std::to_string(src.dim()) +
                             "-d " + std::to_string(src.numel()) + " elements, the model's has " +
                             std::to_string(dst.numel()));
  dst.copy_(src);
}

// Per-parameter optimizer buffers (undefined until first used) as prefix + index.
void save_buffers(TensorMap& state, const std::string& prefix,
                  const std::vector<at::Tensor>& buffers) {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].defined()) state[prefix + std::to_string(i)] = buffers[i].cpu().clone();
}

// The buffers save_buffers wrote, each on its parameter's device; absent ones stay undefined.
void restore_buffers(const TensorMap& state, const std::string& prefix,
                     const std::vector<NamedTensor>& params, std::vector<at::Tensor>& buffers) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    auto it = state.find(prefix + std::to_string(i));
    if (it != state.end()) buffers[i] = it->second.to(params[i].tensor.device()).clone();
  }
}

}  // namespace

void Trainer::save_checkpoint(const LoaderPosition& pos, const StepStats& es) {
  torch::NoGradGuard no_grad;
  TensorMap state;
  for (const auto& p : params_) state["model.param." + p.name] = p.tensor.detach().cpu().clone();
  for (const auto& b : buffers_) state["model.buffer." + b.name] = b.tensor.detach().cpu().clone();
  save_buffers(state, "optimizer.momentum.", optimizer_->momentum_buffers());
  save_buffers(state, "optimizer.wd_momentum.", optimizer_->weight_decay_buffers());
  AlgorithmState alg;
  algorithm_->save_state(alg);
  for (const auto& [key, t] : alg) state["algorithm." + key] = t.cpu();
  state["trainer.numbers"] = torch::tensor(
      {double(step_), double(pos.epoch), double(pos.cursor), double(cum_payload_), double(cum_bus_),
       best_accuracy_, last_accuracy_, reached_target_ ? 1.0 : 0.0, monotonic_seconds() - start_,
       es.loss_sum, es.correct, es.count, es.compute, es.comm, double(es.steps)},
      torch::kDouble);
  state["loader.rng"] = bytes_tensor(pos.rng_state);
  state["rng.cpu"] = at::detail::getDefaultCPUGenerator().get_state();
  for (const auto& [op, c] : comm_.totals()) {
    state["comm." + op] = torch::tensor(
        {c.calls, c.elements, c.payload_bytes, c.bus_bytes, c.latency_steps}, torch::kInt64);
    state["comm." + op + ".seconds"] = torch::scalar_tensor(c.seconds, torch::kDouble);
  }
  if (store_) store_->flush();  // rows up to this step are committed before the checkpoint exists
  checkpoints_->write(step_, state);
  control_.barrier();
  if (comm_.rank() == 0) checkpoints_->commit(step_);
  control_.barrier();
}

LoaderPosition Trainer::restore_checkpoint(StepStats& es) {
  torch::NoGradGuard no_grad;
  TensorMap state = checkpoints_->read(resume_step_);
  for (auto& p : params_) copy_into(p.tensor, need(state, "model.param." + p.name), p.name);
  for (auto& b : buffers_) copy_into(b.tensor, need(state, "model.buffer." + b.name), b.name);
  restore_buffers(state, "optimizer.momentum.", params_, optimizer_->momentum_buffers());
  restore_buffers(state, "optimizer.wd_momentum.", params_, optimizer_->weight_decay_buffers());
  const at::Tensor numbers = need(state, "trainer.numbers").contiguous();
  if (numbers.numel() != 15)
    throw std::runtime_error("checkpoint: trainer.numbers has the wrong length");
  const double* n = numbers.data_ptr<double>();
  if (static_cast<int64_t>(n[0]) != resume_step_)
    throw std::runtime_error("checkpoint: the file of step " + std::to_string(resume_step_) +
                             " holds step " + std::to_string(static_cast<int64_t>(n[0])));
  step_ = static_cast<int64_t>(n[0]);
  LoaderPosition pos{static_cast<int64_t>(n[1]), static_cast<int64_t>(n[2]),
                     tensor_bytes(need(state, "loader.rng"))};
  cum_payload_ = static_cast<int64_t>(n[3]);
  cum_bus_ = static_cast<int64_t>(n[4]);
  best_accuracy_ = n[5];
  last_accuracy_ = n[6];
  reached_target_ = n[7] != 0;
  start_ = monotonic_seconds() - n[8];
  es.loss_sum = n[9];
  es.correct = n[10];
  es.count = n[11];
  es.compute = n[12];
  es.comm = n[13];
  es.steps = static_cast<int64_t>(n[14]);
  loader_->restore(pos);
  at::Generator cpu_gen = at::detail::getDefaultCPUGenerator();
  cpu_gen.set_state(need(state, "rng.cpu"));
  std::map<std::string, CommCounters> totals;
  for (const auto& [key, t] : state) {
    const bool seconds = key.size() > 8 && key.compare(key.size() - 8, 8, ".seconds") == 0;
    if (key.rfind("comm.", 0) != 0 || seconds) continue;
    const std::string op = key.substr(5);
    auto v = t.contiguous();
    const int64_t* c = v.data_ptr<int64_t>();
    CommCounters& counters = totals[op];
    counters.calls = c[0];
    counters.elements = c[1];
    counters.payload_bytes = c[2];
    counters.bus_bytes = c[3];
    counters.latency_steps = c[4];
    counters.seconds = need(state, key + ".seconds").item<double>();
  }
  comm_.restore_totals(std::move(totals));
  checkpoint_state_ = std::move(state);
  return pos;
}

}  // namespace cedar
