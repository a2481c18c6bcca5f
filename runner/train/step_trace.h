#pragma once
// A record of one rank's training for the differential tests against PyTorch
// (tests/differential/, docs/differential.md), switched on by the environment:
//
//   CEDAR_TRACE_DIR=DIR     each rank writes DIR/rank<r>.pt at the end of the run: its initial
//                           parameters and buffers ("init.<name>"), the normalised images and
//                           labels of every step's batch ("x.<step>", "y.<step>"), the
//                           gradient each step's update used, after the algorithm's exchange
//                           (e.g. the average), all parameters flattened in parameter order
//                           ("grad.<step>"), its local training loss per step ("loss"), and its
//                           final parameters, buffers and algorithm state ("final.<name>",
//                           "algorithm.<key>").
//   CEDAR_TRACE_INJECT=FILE after the algorithm's setup, its state is loaded from FILE
//                           (Algorithm::load_state; e.g. PowerSGD's initial "query.<name>"), so
//                           both implementations start from the same values without sharing a
//                           random generator.
//
// The files are torch::pickle_save dictionaries of tensors, which Python's torch.load reads;
// FILE is what torch.save writes from such a dictionary. Without the variables nothing is kept.
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"

namespace cedar {

class StepTrace {
 public:
  // The trace CEDAR_TRACE_DIR asks for, or null.
  static std::unique_ptr<StepTrace> from_environment(int rank);
  // The state CEDAR_TRACE_INJECT names (empty without it); throws naming an unreadable file.
  static AlgorithmState injected_state();

  void initial(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>& buffers);
  void step(const at::Tensor& images, const at::Tensor& labels, double loss);
  // The exchanged gradients of this step (before the optimizer), as "grad.<step>".
  void gradients(const std::vector<NamedTensor>& params, const std::vector<GradBucket>& buckets);
  // Writes the file; throws std::runtime_error naming it when it cannot be written.
  void finish(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>& buffers,
              const AlgorithmState& algorithm);

 private:
  explicit StepTrace(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::vector<std::pair<std::string, at::Tensor>> entries_;
  std::vector<double> losses_;
};

}  // namespace cedar
