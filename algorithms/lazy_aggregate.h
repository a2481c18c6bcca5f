#pragma once
// What the lazily aggregated gradient methods share (LAG-WK, algorithms/lag.cpp; LASG,
// algorithms/lasg.cpp): each worker's last upload ĝ_m, the aggregate ∇ = (1/P) Σ_m ĝ_m that every
// rank applies, its exchange, and the parameter moves ‖θ^{k+1} − θ^k‖² the upload threshold is
// built from (algorithms/lag_threshold.h). The rule deciding whether a worker uploads is each
// paper's own.
//
// Exchange: one allgatherv per step; an uploader contributes Δ = g − ĝ (4 bytes per element),
// every other rank an empty tensor, so a skipped upload costs zero gradient bytes (the
// allgatherv's 8-byte length per rank is still metered). Every rank then sets
//   ∇ ← ∇ + (0 + Δ_1 + Δ_2 + ...)/P   (the uploaders' deltas in rank order)
// and every bucket to ∇. The rule is per worker over the WHOLE model: the buckets of a step are
// collected and the exchange happens once, when the last one arrives (the trainer reduces all
// buckets before the optimizer step).
//
// Squared norms are summed in fp64 over the fp32 differences (each square exact): on the CPU per
// bucket (per parameter for the moves) in the eight-partial-sum order of codecs/simd.h, the sums
// added in bucket (parameter) order. Tensors on another device take the equivalent LibTorch
// operations.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"

namespace cedar {

// Σ (a_i − b_i)² in fp64, in the order above.
double tensor_squared_distance(const at::Tensor& a, const at::Tensor& b);

class LazyAggregate {
 public:
  // `name` prefixes the errors ("lag: ...").
  explicit LazyAggregate(std::string name) : name_(std::move(name)) {}

  // Adds a bucket of the step; true when the step's last one arrived (`num_params` gradients in
  // all): the collected buckets are then sorted by index, and g is their concatenation.
  bool collect(GradBucket& bucket, size_t num_params);
  const std::vector<GradBucket*>& buckets() const { return pending_; }

  // ‖g − ĝ‖² (LAG-WK's trigger). With `prepare_upload` the same pass also writes Δ and a copy of
  // g, which exchange() then takes instead of a pass of its own when the rank uploads (the sum is
  // the same).
  double change_since_upload(bool prepare_upload);

  // The step's exchange: with `upload` this rank sends Δ = g − ĝ and ĝ ← g. Every collected
  // bucket gets the new aggregate. Returns the number of ranks that uploaded; the collected
  // buckets are released.
  int64_t exchange(Communicator& comm, bool upload);

  // Checkpoints: ĝ and ∇ (keys "last_upload", "aggregate"), once the first step defined them.
  void save(AlgorithmState& out) const;
  void load(const AlgorithmState& in);

 private:
  void allocate(int64_t n);
  int64_t exchange_cpu(Communicator& comm, bool upload, int64_t n);
  int64_t exchange_tensors(Communicator& comm, bool upload);
  // The collected flats in bucket order with their offsets in last_upload_/aggregate_.
  template <class Fn>
  void for_each_bucket(Fn fn);

  std::string name_;
  size_t seen_ = 0;
  std::vector<GradBucket*> pending_;
  at::Tensor last_upload_;  // ĝ_m, all buckets concatenated in bucket order
  at::Tensor aggregate_;    // ∇ (the average), same layout
  at::Tensor delta_;        // this rank's upload, reused from step to step
  at::Tensor next_upload_;  // g, copied by a prepared trigger pass (CPU); swapped in
  bool prepared_ = false;   // delta_ (and on the CPU next_upload_) hold this step's Δ (and g)
};

// ‖θ^{k+1} − θ^k‖² from one step to the next: the parameters after each step, kept to measure the
// next move.
class ParameterMoves {
 public:
  void setup(const std::vector<NamedTensor>& params);
  // ‖θ − θ_prev‖² over `params` (the order of setup()); θ_prev ← θ.
  double moved(const std::vector<NamedTensor>& params);
  // θ^k: the parameters after the last step (before the first: those given to setup()), the same
  // on every rank where every rank applies the same update.
  const std::vector<at::Tensor>& current() const { return previous_; }
  // Checkpoints: θ_prev under "previous.<i>".
  void save(AlgorithmState& out) const;
  void load(const AlgorithmState& in);

 private:
  std::vector<at::Tensor> previous_;
};

}  // namespace cedar
