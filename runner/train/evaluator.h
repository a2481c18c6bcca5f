#pragma once
// Evaluation on the full test set, split across ranks (rank r takes images r, r+P, ...), with
// loss and correct counts summed over ranks.
#include <torch/types.h>

#include <functional>
#include <optional>

#include "datasets/image_set.h"
#include "models/model.h"
#include "results/store.h"

namespace cedar {

class Communicator;

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  int64_t count = 0;
  // evaluate_averaged_model: the consensus distance (1/P) Σ_i ‖x_i − x̄‖² over every parameter
  // (not the buffers), x̄ the average model; 0 on one rank and where the ranks' models agree.
  double consensus_distance = 0;
};

// Whether an epoch of `steps_per_epoch` steps with `evals_per_epoch` evenly spaced evaluations
// evaluates after its `done`-th step (1-based): evaluation k of n (k = 1..n) comes after step
// ceil(k * steps_per_epoch / n), so the n-th is at the epoch's end; with more evaluations than
// steps, after every step.
bool evaluation_due(int64_t done, int64_t steps_per_epoch, int64_t evals_per_epoch);

// The results row of evaluation `r` after `step` steps (at `epoch`, `wall_seconds` into training,
// with the bytes sent so far), with the training loss and accuracy of the sums given.
EvalRow eval_row(const EvalResult& r, int64_t step, double epoch, double wall_seconds,
                 int64_t cum_payload_bytes, int64_t cum_bus_bytes, double train_loss_sum,
                 double train_correct, double train_count);

// `amp`: the forward pass and loss under autocast in that dtype (train.amp), as in training.
EvalResult evaluate(Model& model, const ImageSet& test, const Normalization& norm,
                    int64_t batch_size, const torch::Device& device, Communicator& comm,
                    std::optional<at::ScalarType> amp = std::nullopt);

// The model a data-parallel run would deploy: the average over ranks of every parameter and
// floating-point buffer (batch-norm running statistics), evaluated on the whole test set. The
// ranks' own models are restored bitwise afterwards, so evaluating never changes training (local
// SGD between two syncs keeps its local models). The averaging is harness bookkeeping: `control`
// is the unmetered channel, so its bytes count neither in the training bytes nor in projections.
// Where the ranks' models already agree (dense and every gradient-averaging algorithm) the
// average is that model up to rounding. Also measures how far the ranks' parameters are from it
// (EvalResult::consensus_distance; gossip algorithms and local SGD leave them apart), summed in
// fp64 on each rank and over ranks on `control`.
EvalResult evaluate_averaged_model(Model& model, const ImageSet& test, const Normalization& norm,
                                   int64_t batch_size, const torch::Device& device,
                                   Communicator& control,
                                   std::optional<at::ScalarType> amp = std::nullopt);

// The averaging of evaluate_averaged_model around any evaluation of the model: `evaluate` runs
// on the averaged model (collective on `control`), the ranks' own models restored afterwards.
EvalResult evaluate_averaged(Model& model, Communicator& control,
                             const std::function<EvalResult()>& evaluate);

}  // namespace cedar
