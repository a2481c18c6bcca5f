// Trainer checkpoints: what one rank saves and restores so that a resumed run computes exactly
// what the uninterrupted run would have (bitwise on CPU with one thread per rank).
#include <torch/torch.h>

#include <stdexcept>

#include "runner/train/checkpoint_state.h"
#include "runner/train/mixed_precision.h"
#include "runner/train/optimizer.h"
#include "runner/train/trainer.h"

namespace cedar {

void Trainer::save_checkpoint(const LoaderPosition& pos, const StepStats& es) {
  torch::NoGradGuard no_grad;
  TensorMap state;
  for (const auto& p : params_) state["model.param." + p.name] = p.tensor.detach().cpu().clone();
  for (const auto& b : buffers_) state["model.buffer." + b.name] = b.tensor.detach().cpu().clone();
  save_buffers(state, "optimizer.momentum.", optimizer_->momentum_buffers());
  save_buffers(state, "optimizer.wd_momentum.", optimizer_->weight_decay_buffers());
  for (const auto& [key, buffers] : optimizer_->more_buffers())
    save_buffers(state, "optimizer." + key + ".", *buffers);
  state["optimizer.steps"] = torch::tensor({optimizer_->steps()}, torch::kLong);
  AlgorithmState alg;
  algorithm_->save_state(alg);
  for (const auto& [key, t] : alg) state["algorithm." + key] = t.cpu();
  state["trainer.numbers"] = torch::tensor(
      {double(step_), double(pos.epoch), double(pos.cursor), double(cum_payload_), double(cum_bus_),
       best_accuracy_, last_accuracy_, reached_target_ ? 1.0 : 0.0, monotonic_seconds() - start_,
       es.loss_sum, es.correct, es.count, es.compute, es.comm, double(es.steps)},
      torch::kDouble);
  state["loader.rng"] = bytes_tensor(pos.rng_state);
  if (scaler_) scaler_->save(state);  // fp16: the loss scale and its growth count
  save_cpu_rng(state);
  save_comm_totals(state, comm_);
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
  for (const auto& [key, buffers] : optimizer_->more_buffers())
    restore_buffers(state, "optimizer." + key + ".", params_, *buffers);
  if (auto it = state.find("optimizer.steps"); it != state.end())
    optimizer_->set_steps(it->second.item<int64_t>());
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
  if (scaler_) scaler_->load(state);
  restore_cpu_rng(state);
  restore_comm_totals(state, comm_);
  checkpoint_state_ = std::move(state);
  return pos;
}

}  // namespace cedar
