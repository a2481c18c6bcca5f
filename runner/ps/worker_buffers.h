#pragma once
// The model's buffers (batch-norm running statistics) in a parameter-server run. They are not
// parameters: no gradient reaches them, and batch norm's train-mode forward normalises with the
// batch's own statistics, never reading them. So the servers never hold them: each worker keeps
// its own, updated by its forward passes, and sends them with every step's statistics
// (runner/ps/protocol.h); rank 0 keeps the latest of each worker here, and the model it evaluates
// (and, after the run, the final model) carries their average, as the all-reduce trainer's
// evaluation averages the ranks' (runner/train/evaluator.h).
//
// Other systems do the same: Keras' BatchNormalization declares moving_mean and moving_variance
// non-trainable with synchronization ON_READ and aggregation MEAN (tensorflow/python/keras/layers/
// normalization/batch_normalization.py): every replica updates its own copy and a read (an
// evaluation, a checkpoint) sees their mean (tf.VariableSynchronization). MXNet's kvstore carries
// the parameters only; the auxiliary states (moving mean and variance) stay where they are
// computed and are averaged over the devices when the model is read out
// (python/mxnet/module/executor_group.py, get_params; apache/mxnet#1410). TensorFlow 1's
// ParameterServerStrategy instead placed every variable, moving averages included, on the
// servers, where each worker's moving-average update lands in turn, so their value depends on
// the order the updates arrive in; keeping the trainer's rule instead makes a bsp run evaluate,
// bitwise, the model a dense all-reduce run of the same workers evaluates.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "models/model.h"
#include "runner/train/checkpoint.h"

namespace cedar {

class WorkerBuffers {
 public:
  // Every worker starts from `model`'s buffers (model order): their initial values.
  WorkerBuffers(Model& model, int workers);

  // The doubles one worker's buffers take on the wire.
  int64_t words() const { return words_; }
  // `model`'s buffers, flat in model order, as doubles: exact for fp32 statistics and for the
  // batch counts (int64 below 2^53).
  static at::Tensor pack(Model& model);
  // The latest buffers of `worker`: words() doubles as pack lays them out.
  void receive(int worker, const double* words);
  // Writes into `model`'s buffers: each floating-point one the mean over the workers (summed in
  // its dtype in worker order, then divided by the workers, as an allreduce-average of two ranks
  // does), each integer one (num_batches_tracked) worker 0's, as the trainer keeps rank 0's own.
  void average_into(Model& model) const;

  // Checkpoints: the latest buffers of each worker as prefix + worker (nothing for a model
  // without buffers).
  void save(TensorMap& state, const std::string& prefix) const;
  void restore(const TensorMap& state, const std::string& prefix);

 private:
  std::vector<at::Tensor> latest_;  // per worker: words_ doubles
  int64_t words_ = 0;
};

}  // namespace cedar
