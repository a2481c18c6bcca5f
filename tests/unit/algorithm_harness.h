#pragma once
// The harness every algorithm test shares: algorithms built from inline YAML, gradient buckets laid
// out as the trainer lays them out (entries are views of one flat fp32 buffer), steps on n
// in-process ranks (threads) through a metering communicator, and the checks of what every rank
// must agree on.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/codecs/codecs.h"  // make_generator, the codecs
#include "comm/inprocess_communicator.h"
#include "comm/metered_communicator.h"

namespace cedar::testing {

// ---------------------------------------------------------------- algorithms

// The registered algorithm `name` (find_algorithm) built from inline YAML parameters.
std::unique_ptr<Algorithm> make_algorithm(const std::string& name, const std::string& yaml = "{}");
// The parameters `yaml` resolves to for algorithm `name`, defaults filled in.
YAML::Node resolved_params(const std::string& name, const std::string& yaml = "{}");

// "local-sgd" -> "local_sgd": the test-name suffix gtest needs (letters, digits and '_' only).
std::string algorithm_test_name(const ::testing::TestParamInfo<std::string>& info);

// ---------------------------------------------------------------- buckets and gradients

using NamedShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// Zero gradients of the given shapes and names, each with a zero parameter.
GradBucket bucket_of_named_shapes(const NamedShapes& shapes, int64_t index = 0);
// Zero gradients of the given shapes; entry i is named prefix + i.
GradBucket bucket_of_shapes(const std::vector<std::vector<int64_t>>& shapes, int64_t index = 0,
                            const std::string& prefix = "t");
// A bucket holding copies of `grads` (entries named p0, p1, ...).
GradBucket bucket_of_grads(const std::vector<at::Tensor>& grads, int64_t index = 0);
// A bucket with one zero gradient per parameter, whose entries carry the parameters themselves
// (for algorithms that read them, such as LAG).
GradBucket bucket_of_params(const std::vector<NamedTensor>& params, int64_t index = 0);

// n standard-normal values from the project's seeded generator.
at::Tensor randn_seeded(int64_t n, uint64_t seed);

// The parameter shapes of CIFAR ResNet-20 (option-A shortcuts): 269,722 values.
std::vector<std::vector<int64_t>> resnet20_shapes();

// Rank r's gradients at step t for the quantizer tests: a 4x3x3x3 conv weight scaled by r + 1
// with one outlier of 40(r + 1) (beyond 2.5 sigma), 257 standard normals and 10 values of scale
// 1e-2.
std::vector<at::Tensor> quantizer_grads(int rank, int64_t step);

// p with everything but its k largest magnitudes zeroed (the definition of top-k).
at::Tensor topk_dense(const at::Tensor& p, int64_t k);

// ⌈a / b⌉ for the byte formulas.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// True when both tensors hold the same type, count and bytes (-0.0 differs from 0.0).
bool same_bits(const at::Tensor& a, const at::Tensor& b);
// The values of an fp32 tensor, in element order.
std::vector<float> values_of(const at::Tensor& t);

// ---------------------------------------------------------------- codecs

// The message of what codec.decompress throws ("" when it accepts the payload).
std::string decode_error(Compressor& codec, const at::Tensor& payload, int64_t numel);
// n bytes of 0x5a: a payload of the wrong size for the decoders.
at::Tensor filler_bytes(int64_t n);
// 13 values exact in half precision, of both signs, with a zero.
std::vector<float> codec_test_values();
// n packed sign bits (bit i of byte i / 8, least significant first) decoded by hand: `one` for a 1
// bit, `zero` for a 0 bit (the oracle of the sign codecs' bit arithmetic).
at::Tensor decode_sign_bits(const uint8_t* bits, int64_t n, float one, float zero);

// ---------------------------------------------------------------- steps

// What each step's StepContext holds; the gradient bucket gets index `bucket_index`.
struct StepOptions {
  StepOptions() = default;
  explicit StepOptions(uint64_t seed_, int64_t bucket_index_ = 0, double lr_ = 0.1)
      : seed(seed_), bucket_index(bucket_index_), lr(lr_) {}

  uint64_t seed = 0;
  int64_t bucket_index = 0;
  double lr = 0.1;
  // When set, the learning rate of each step (instead of `lr`).
  std::function<double(int64_t step)> lr_schedule;
  // When set, called on each step's context after the fields above are filled (epoch, ...).
  std::function<void(StepContext&)> configure;

  double lr_at(int64_t step) const { return lr_schedule ? lr_schedule(step) : lr; }
};

// The quantizer tests' multi-rank steps: run seed 77, bucket 1, a learning rate decaying as
// 0.1 / (1 + t).
StepOptions decaying_lr_options();

// One rank's view of one step.
struct StepResult {
  std::vector<at::Tensor> grads;   // the update every entry holds after reduce_gradients
  std::vector<at::Tensor> params;  // the parameters after the step
  CommCounters comm;               // what this rank's communicator metered during the step
  std::map<std::string, double> stats;
};

// Rank r's gradients at step t, one tensor per bucket entry.
using GradsOf = std::function<std::vector<at::Tensor>(int rank, int64_t step)>;

// Steps 0 .. steps-1 of algorithm `name` (built from `yaml` on each rank) on `ranks` in-process
// ranks, each through its own MeteredCommunicator: setup with zero parameters of the gradients'
// shapes, then per step reduce_gradients on a bucket of grads_of(rank, step) and after_step.
// The parameters are not updated. The step's batch_gradient_at gives grads_of(rank, step) at any
// parameters (these gradients do not depend on them). Returns the results as [rank][step].
std::vector<std::vector<StepResult>> run_steps(int ranks, const std::string& name,
                                               const std::string& yaml, int steps,
                                               const GradsOf& grads_of,
                                               const StepOptions& options = {});

// Rank r's gradients at step t given the rank's current parameters.
using TrainGradsOf = std::function<std::vector<at::Tensor>(int rank, int64_t step,
                                                           const std::vector<NamedTensor>& params)>;

// Steps [from, to) of plain SGD on this rank with `alg` already set up: the gradients of
// grads_of in a bucket of the parameters' shapes, reduce_gradients, p -= lr · update, after_step.
// The step's batch_gradient_at is grads_of(rank, step, ·) at the parameters it is given.
std::vector<StepResult> train_steps(Algorithm& alg, std::vector<NamedTensor>& params,
                                    Communicator& comm, int64_t from, int64_t to,
                                    const TrainGradsOf& grads_of, const StepOptions& options = {});

// One reduce_gradients of `alg` on a single rank (LocalCommunicator) at `step`; returns the
// update written for `grad`.
at::Tensor reduce_once(Algorithm& alg, const at::Tensor& grad, int64_t step,
                       const StepOptions& options = {});

// The payload bytes each of 2 in-process ranks meters for one step of `name` on seeded gradients
// of ResNet-20's shapes in one bucket.
std::vector<int64_t> resnet20_step_payloads(const std::string& name, const std::string& yaml);

// Every rank holds bitwise identical updates at every step.
void expect_ranks_agree(const std::vector<std::vector<StepResult>>& results);

// Rank r's decodings at step t of what it sent, one per bucket entry (an exchange's oracle).
using DecodedOf = std::function<std::vector<at::Tensor>(int rank, int64_t step)>;

// An exchange that averages the ranks' decodings: at every step of `results`, rank 0's update of
// each entry is, bit for bit, decoded_of(r, t) summed over the ranks in rank order and divided by
// their count, and the step metered one allgather of `payload_bytes` from each rank.
void expect_allgather_of_decodings(const std::vector<std::vector<StepResult>>& results,
                                   const DecodedOf& decoded_of, int64_t payload_bytes);

// ---------------------------------------------------------------- devices

// Three steps of algorithm `name` (default parameters) through `comm`, on `comm`'s device: the
// same parameters on every rank, gradients seeded by (rank, step). What came out, for comparing
// one device's run with another's.
struct DeviceExchange {
  at::Tensor last_update;                      // the last step's reduced bucket, on the CPU
  std::map<std::string, CommCounters> totals;  // comm's per-operation counters
  bool stayed_on_device = true;                // every reduced bucket was left on the device
};
DeviceExchange exchange_on_device(const std::string& name, MeteredCommunicator& comm);

// Runs fn(comm) on n in-process ranks and returns each rank's result, in rank order.
template <class Fn>
auto on_ranks(int n, Fn fn) -> std::vector<decltype(fn(std::declval<Communicator&>()))> {
  std::vector<decltype(fn(std::declval<Communicator&>()))> out(static_cast<size_t>(n));
  // Each thread writes only its own element, which the vector holds already.
  run_ranks(n, [&](Communicator& comm) { out[static_cast<size_t>(comm.rank())] = fn(comm); });
  return out;
}

}  // namespace cedar::testing
