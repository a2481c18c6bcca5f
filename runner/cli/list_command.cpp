#include <cstdio>

#include "algorithms/algorithm.h"
#include "config/experiment_config.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "runner/cli/commands.h"

namespace cedar {
namespace {

void print_params(const std::vector<ParamDoc>& docs, const char* indent) {
  for (const auto& d : docs)
    std::printf("%s%-22s %-12s %s%s%s\n", indent, d.key.c_str(), d.default_value.c_str(),
                d.doc.c_str(), d.range.empty() ? "" : "  ", d.range.c_str());
}

}  // namespace

int command_list() {
  std::printf("models:\n");
  for (const auto& m : model_catalog())
    std::printf("  %-16s %s\n", m.name.c_str(), m.description.c_str());
  std::printf("\ndatasets:\n");
  for (const auto& d : dataset_catalog())
    std::printf("  %-16s %s\n", d.name.c_str(), d.description.c_str());
  std::printf("\nalgorithms (key, default, meaning):\n");
  for (const auto& a : algorithm_catalog()) {
    std::printf("  %-16s %s\n  %-16s [%s]\n", a.name.c_str(), a.description.c_str(), "",
                a.paper.c_str());
    print_params(a.params(), "      ");
  }
  std::printf("\nexperiment sections (key, default, meaning):\n");
  std::printf("  model:\n");
  print_params(describe_params<ModelConfig>(), "      ");
  std::printf("  data:\n");
  print_params(describe_params<DataConfig>(), "      ");
  std::printf("  train:\n");
  print_params(describe_params<TrainConfig>(), "      ");
  std::printf("  optimizer:\n");
  print_params(describe_params<OptimizerConfig>(), "      ");
  std::printf("  network:\n");
  print_params(describe_params<NetworkConfig>(), "      ");
  std::printf("  results:\n");
  print_params(describe_params<ResultsConfig>(), "      ");
  return 0;
}

}  // namespace cedar
