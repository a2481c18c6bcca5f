// Experiment files from arbitrary text, through load_experiment (the path `cedar run` takes).
// Lines "#set key=value" (YAML comments) become --set overrides. Every input must either load or
// throw ConfigError; a loaded one's resolved YAML must load again and resolve to the same text
// (it is what the results database keeps and `cedar suite` compares).
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "fuzz/fuzz_temp.h"

using cedar::ConfigError;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("#set ", 0) == 0) overrides.push_back(line.substr(5));

  const auto file = cedar::fuzz::scratch_dir() / "experiment.yaml";
  cedar::fuzz::write_file(file, data, size);
  std::string resolved;
  try {
    resolved = cedar::resolved_yaml(cedar::load_experiment(file.string(), overrides), "{}");
  } catch (const ConfigError&) {
    return 0;
  }
  const auto again = cedar::fuzz::scratch_dir() / "resolved.yaml";
  cedar::fuzz::write_file(again, reinterpret_cast<const uint8_t*>(resolved.data()),
                          resolved.size());
  std::string second;
  try {
    second = cedar::resolved_yaml(cedar::load_experiment(again.string()), "{}");
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "resolved configuration does not load again: %s\n%s\n", e.what(),
                 resolved.c_str());
    std::abort();
  }
  if (second != resolved) {
    std::fprintf(stderr, "resolved configuration changes on reload:\n%s\n---\n%s\n",
                 resolved.c_str(), second.c_str());
    std::abort();
  }
  return 0;
}
