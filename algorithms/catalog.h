#pragma once
// Every algorithm's factory, declared once from the list in algorithm_list.h. Each is defined in
// its paper file (algorithms/<id>.cpp) and listed, in that order, by algorithm_catalog()
// (algorithms/registry.cpp). Tests, benchmarks and fuzz targets include this header or go through
// find_algorithm(name).
#include "algorithms/algorithm.h"

namespace cedar {

#define CEDAR_ALGORITHM(id) AlgorithmInfo id##_algorithm();
#include "algorithms/algorithm_list.h"
#undef CEDAR_ALGORITHM

}  // namespace cedar
