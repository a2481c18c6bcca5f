// The explicit, ordered list of registered algorithms. Adding one: its paper file with the
// `xxx_algorithm()` factory, a declaration in catalog.h and a line here.
#include "algorithms/catalog.h"

namespace cedar {

const std::vector<AlgorithmInfo>& algorithm_catalog() {
  // One algorithm per line, in the order `cedar list` and the comparison tables show them.
  // clang-format off
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
      gtopk_algorithm(),
      hierarchical_algorithm(),
      dpsgd_algorithm(),
      choco_sgd_algorithm(),
      parameter_server_algorithm(),
      script_algorithm(),
  };
  // clang-format on
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
