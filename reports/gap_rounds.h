#pragma once
// What full-batch runs (train.full_batch) record about the optimality gap f(θ_k) − f*, read from
// their step statistics: the communication rounds spent until the gap first reached the run's
// train.target_gap, and the last step's gap. LAG (Chen, Giannakis, Sun, Yin, NeurIPS 2018, Sec. 5)
// compares methods by the rounds (worker uploads) they need to reach a given gap. No LibTorch.
#include <cstdint>

#include "results/results_reader.h"

namespace cedar {

struct GapResult {
  bool has_gap = false;  // the run recorded a gap (a full-batch run)
  double final_gap = 0;  // the gap of its last step
  // Uploads of the steps before the first with stat 'gap_reached' (LAG's step stat 'uploads';
  // a step without it counts every worker: dense gradient descent); −1: never reached.
  double rounds_to_gap = -1;
};

GapResult read_gap_result(ResultsReader& db, int64_t run_id, int64_t workers);

}  // namespace cedar
