// The explicit, ordered list of registered algorithms. Adding one: a file with its
// `xxx_algorithm()` factory and a line here.
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

const std::vector<AlgorithmInfo>& algorithm_catalog() {
  static const std::vector<AlgorithmInfo> catalog = {
      dense_sgd_algorithm(),
      dgc_algorithm(),
      topk_algorithm(),
      randomk_algorithm(),
      powersgd_algorithm(),
      lag_algorithm(),
      local_sgd_algorithm(),
      qsgd_algorithm(),
      terngrad_algorithm(),
      signsgd_algorithm(),
      ef_signsgd_algorithm(),
      fp16_algorithm(),
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
