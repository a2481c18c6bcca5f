#pragma once
// Every algorithm's factory, declared once. Each is defined in its paper file
// (algorithms/<name>.cpp) and listed, in this order, by algorithm_catalog()
// (algorithms/registry.cpp). Tests, benchmarks and fuzz targets include this header or go through
// find_algorithm(name).
#include "algorithms/algorithm.h"

namespace cedar {

AlgorithmInfo dense_sgd_algorithm();
AlgorithmInfo dgc_algorithm();
AlgorithmInfo topk_algorithm();
AlgorithmInfo randomk_algorithm();
AlgorithmInfo powersgd_algorithm();
AlgorithmInfo lag_algorithm();
AlgorithmInfo local_sgd_algorithm();
AlgorithmInfo qsgd_algorithm();
AlgorithmInfo terngrad_algorithm();
AlgorithmInfo signsgd_algorithm();
AlgorithmInfo ef_signsgd_algorithm();
AlgorithmInfo fp16_algorithm();
AlgorithmInfo gtopk_algorithm();
AlgorithmInfo hierarchical_algorithm();
AlgorithmInfo dpsgd_algorithm();
AlgorithmInfo choco_sgd_algorithm();
AlgorithmInfo parameter_server_algorithm();
AlgorithmInfo script_algorithm();

}  // namespace cedar
