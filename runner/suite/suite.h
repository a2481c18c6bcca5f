#pragma once
// A suite is an experiment file with a `grid:` section. The grid expands into runs:
//   grid:
//     algorithm: [dense, {name: dgc, label: dgc-99.9, sparsity: 0.999},   # names or mappings;
//                 {name: signsgd, set: {optimizer.lr: 0.001}}]         # set: overrides for it
//                 alone; or every registered algorithm (every_registered.h):
//     algorithm: {every: registered, settings: {dgc: {warmup_epochs: 1}}}
//     model: [resnet20, vgg16]       # optional, replaces model.name
//     dataset: [fashion-mnist]       # optional, replaces data.name
//     world_size: [2, 4]             # MPI ranks per run (default [1])
//     seed: [1, 2, 3]                # optional, replaces train.seed
//     overrides: [{optimizer.lr: 0.05}, {optimizer.lr: 0.1}]   # optional --set maps
// Every combination is one run, seeds varying slowest; its name joins the algorithm label with the
// model, dataset, world size and override index where those vary. No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

namespace cedar {

struct SuiteRun {
  std::string name;  // e.g. "dgc-99.9/np4"
  std::string algorithm_label;
  int world_size = 1;
  uint64_t seed = 1;
  std::vector<std::string> overrides;  // --set assignments that make this run from the file
  std::string error;  // why its configuration does not load (expand_suite's keep_invalid_runs)
};

struct Suite {
  std::string file;
  std::string name;  // the file's `suite:` (or `name:`) value
  std::vector<SuiteRun> runs;
};

// The algorithm catalog as this layer sees it (the catalog is in algorithms/, built with LibTorch,
// which this layer does not link): the names `algorithm: {every: registered}` expands to, in
// catalog order. The cedar binary passes gradient_algorithm_names() (algorithms/algorithm.h).
struct RegisteredAlgorithms {
  std::vector<std::string> names;
};

// Expands the grid of `path` (after `extra_overrides`). Throws ConfigError naming file:line:col.
// A run whose own configuration does not load (a value a grid entry sets out of range, an
// unknown name) throws too, unless `keep_invalid_runs`: then it is listed with its `error`, so
// that a preflight reports every such run at once (runner/suite/preflight.h).
Suite expand_suite(const std::string& path, const RegisteredAlgorithms& registered,
                   const std::vector<std::string>& extra_overrides = {},
                   bool keep_invalid_runs = false);

}  // namespace cedar
