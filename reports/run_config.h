#pragma once
// One value of a run's resolved configuration (runs.config, YAML) for the reports: a scalar under a
// top-level section, e.g. train.amp or algorithm.mode. No LibTorch here.
#include <optional>
#include <string>

namespace cedar {

// `section`.`key` of `config_yaml` as text; nullopt when the configuration cannot be read, the
// section is not a map or the key is absent or not a scalar.
std::optional<std::string> config_scalar(const std::string& config_yaml, const char* section,
                                         const char* key);

}  // namespace cedar
