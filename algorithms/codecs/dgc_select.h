#pragma once
// DGC's coordinate selection (Lin et al. 2018): a superset of the exact top-k of |v| found by a
// threshold estimated on a strided sample of |v| instead of a full sort, lowered while too few
// coordinates pass it, refined by a top-k among the candidates when too many do. The rule and its
// constants are in algorithms/dgc.cpp's header comment; bench/compressors_bench.cpp times it
// against torch::topk.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace cedar {

// Indices (int64, ascending) of a superset of the exact top-k of |v| (1-D) with at most
// upper_bound·k elements.
at::Tensor dgc_select(const at::Tensor& v, int64_t k, double density, double sample_ratio,
                      double lower_bound, double upper_bound, int64_t max_adaptation_iters,
                      at::Generator& gen);

}  // namespace cedar
