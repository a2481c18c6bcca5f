// The explicit, ordered list of registered algorithms. Adding one: a file with its
// `xxx_algorithm()` factory and a line here.
#include "algorithms/algorithm.h"

namespace cedar {

AlgorithmInfo dense_sgd_algorithm();

const std::vector<AlgorithmInfo>& algorithm_catalog() {
  static const std::vector<AlgorithmInfo> catalog = {
      dense_sgd_algorithm(),
  };
  return catalog;
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
