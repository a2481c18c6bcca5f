// The catalog: every algorithm of algorithm_list.h, in its order (one line there registers an
// algorithm; docs/adding_an_algorithm.md).
#include "algorithms/catalog.h"

namespace cedar {

const std::vector<AlgorithmInfo>& algorithm_catalog() {
  static const std::vector<AlgorithmInfo> catalog = {
#define CEDAR_ALGORITHM(id) id##_algorithm(),
#include "algorithms/algorithm_list.h"
#undef CEDAR_ALGORITHM
  };
  return catalog;
}

std::vector<std::string> gradient_algorithm_names() {
  std::vector<std::string> names;
  for (const auto& a : algorithm_catalog())
    if (a.exchanges_gradients && a.runs_from_defaults) names.push_back(a.name);
  return names;
}

const AlgorithmInfo& find_algorithm(const std::string& name) {
  std::string known;
  for (const auto& a : algorithm_catalog()) {
    if (a.name == name) return a;
    known += (known.empty() ? "" : ", ") + a.name;
  }
  throw ConfigError("unknown algorithm '" + name + "' (known: " + known + ")");
}

}  // namespace cedar
