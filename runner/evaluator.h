#pragma once
// Evaluation on the full test set, split across ranks (rank r takes images r, r+P, ...), with
// loss and correct counts summed over ranks.
#include <torch/types.h>

#include "datasets/image_set.h"
#include "models/model.h"

namespace cedar {

class Communicator;

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  int64_t count = 0;
};

EvalResult evaluate(Model& model, const ImageSet& test, const Normalization& norm,
                    int64_t batch_size, const torch::Device& device, Communicator& comm);

// Averages batch-norm running statistics (buffers) over ranks so every rank evaluates the same
// model where parameters agree.
void average_buffers(Model& model, Communicator& comm);

}  // namespace cedar
