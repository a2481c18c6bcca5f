#pragma once
// Training throughput of a run, from its step and evaluation rows: the images one rank trains on
// per second. No LibTorch here.
//
// A step row's wall_seconds is the time since the start of training when the step was recorded,
// so a step took the gap since the previous row, less an evaluation that ran in that gap (an
// evaluation row after `step` steps falls between step rows step - 1 and step). Per epoch:
// batch size per rank × its step rows ÷ the sum of their times; the run's figure is the median
// over its epochs (robust to an epoch slowed by something else on the machine).
#include <cstdint>
#include <string>
#include <vector>

#include "results/step_queries.h"

namespace cedar {

// The median seconds of one rank's step over the steps numbered `from_step` on (at least 1: step
// 0's row comes after the set-up of training as well): a step took the gap since the previous
// row, less an evaluation that ran in it, ÷ the row's share. 0 when no step counts. What
// step_speedup claims compare (reports/claims.h): unlike the runs' wall-clock it leaves out
// start-up, warm-up steps before `from_step` and evaluations.
double median_step_seconds(const std::vector<StepTime>& steps, const std::vector<EvalTime>& evals,
                           int64_t from_step = 1);
// The same for run `run_id` of the database.
double median_step_seconds(ResultsReader& db, int64_t run_id, int64_t from_step = 1);

// Images per second on one rank; `steps` in step order. 0 when unknown (no steps, no batch
// size, no measurable time).
double training_images_per_second(const std::vector<StepTime>& steps,
                                  const std::vector<EvalTime>& evals, int64_t batch_size);

// The same for run `run_id` of the database.
double training_images_per_second(ResultsReader& db, int64_t run_id, int64_t batch_size);

// train.batch_size of a run's resolved configuration (runs.config); 0 when it has none.
int64_t batch_size_of(const std::string& config_yaml);

}  // namespace cedar
