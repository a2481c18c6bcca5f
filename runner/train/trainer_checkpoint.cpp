// Trainer checkpoints: what one rank saves and restores so that a resumed run computes exactly
// what the uninterrupted run would have (bitwise on CPU with one thread per rank).
#include <torch/torch.h>

#include <stdexcept>

#include "runner/train/checkpoint_state.h"
#include "runner/train/mixed_precision.h"
#include "runner/train/optimizer.h"
#include "runner/train/trainer.h"

namespace cedar {
namespace {

constexpr const char* kRecorderKey = "trainer.recorder";

// A checkpoint written before the recorder had its own entry holds 15 numbers in trainer.numbers:
// step, the loader's epoch and cursor, the cumulative payload and bus bytes, the best and last
// test accuracy, whether the target was reached, the seconds of training, the epoch's loss sum,
// correct and count, then three numbers nothing reads (its compute and communication seconds and
// steps). The recorder's entry, in StepRecorder::save's order, from those.
TensorMap recorder_state_of_15_numbers(const double* n) {
  return {{kRecorderKey,
           torch::tensor({n[3], n[4], n[9], n[10], n[11], n[6], n[5], n[8]}, torch::kDouble)}};
}

}  // namespace

void Trainer::save_checkpoint(const LoaderPosition& pos) {
  torch::NoGradGuard no_grad;
  TensorMap state;
  for (const auto& p : params_) state["model.param." + p.name] = p.tensor.detach().cpu().clone();
  for (const auto& b : buffers_) state["model.buffer." + b.name] = b.tensor.detach().cpu().clone();
  save_buffers(state, "optimizer.momentum.", optimizer_->momentum_buffers());
  save_buffers(state, "optimizer.wd_momentum.", optimizer_->weight_decay_buffers());
  for (const auto& [key, buffers] : optimizer_->more_buffers())
    save_buffers(state, "optimizer." + key + ".", *buffers);
  state["optimizer.steps"] = torch::tensor({optimizer_->steps()}, torch::kLong);
  save_fusion(state);
  AlgorithmState alg;
  algorithm_->save_state(alg);
  for (const auto& [key, t] : alg) state["algorithm." + key] = t.cpu();
  state["trainer.numbers"] = torch::tensor(
      {double(step_), double(pos.epoch), double(pos.cursor), reached_target_ ? 1.0 : 0.0},
      torch::kDouble);
  recorder_.save(state, kRecorderKey);
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

LoaderPosition Trainer::restore_checkpoint() {
  torch::NoGradGuard no_grad;
  TensorMap state = checkpoints_->read(resume_step_);
  if (restore_fusion(state)) build_optimizer();  // over the restored buckets' gradients
  for (auto& p : params_) copy_into(p.tensor, need(state, "model.param." + p.name), p.name);
  for (auto& b : buffers_) copy_into(b.tensor, need(state, "model.buffer." + b.name), b.name);
  restore_buffers(state, "optimizer.momentum.", params_, optimizer_->momentum_buffers());
  restore_buffers(state, "optimizer.wd_momentum.", params_, optimizer_->weight_decay_buffers());
  for (const auto& [key, buffers] : optimizer_->more_buffers())
    restore_buffers(state, "optimizer." + key + ".", params_, *buffers);
  if (auto it = state.find("optimizer.steps"); it != state.end())
    optimizer_->set_steps(it->second.item<int64_t>());
  const at::Tensor numbers = need(state, "trainer.numbers").contiguous();
  const bool before_recorder = numbers.numel() == 15 && !state.count(kRecorderKey);
  if (numbers.scalar_type() != torch::kDouble || (numbers.numel() != 4 && !before_recorder))
    throw std::runtime_error("checkpoint: 'trainer.numbers' holds " +
                             std::to_string(numbers.numel()) + " numbers, not 4 doubles");
  const double* n = numbers.data_ptr<double>();
  if (static_cast<int64_t>(n[0]) != resume_step_)
    throw std::runtime_error("checkpoint: the file of step " + std::to_string(resume_step_) +
                             " holds step " + std::to_string(static_cast<int64_t>(n[0])));
  step_ = static_cast<int64_t>(n[0]);
  LoaderPosition pos{static_cast<int64_t>(n[1]), static_cast<int64_t>(n[2]),
                     tensor_bytes(need(state, "loader.rng"))};
  reached_target_ = n[before_recorder ? 7 : 3] != 0;
  recorder_.restore(before_recorder ? recorder_state_of_15_numbers(n) : state, kRecorderKey);
  loader_->restore(pos);
  if (scaler_) scaler_->load(state);
  restore_cpu_rng(state);
  restore_comm_totals(state, comm_);
  checkpoint_state_ = std::move(state);
  return pos;
}

}  // namespace cedar
