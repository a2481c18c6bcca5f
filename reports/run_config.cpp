#include "reports/run_config.h"

#include <yaml-cpp/yaml.h>

namespace cedar {

std::optional<std::string> config_scalar(const std::string& config_yaml, const char* section,
                                         const char* key) {
  try {
    const YAML::Node root = YAML::Load(config_yaml);
    if (!root.IsMap()) return std::nullopt;
    const YAML::Node s = root[section];
    if (!s.IsMap()) return std::nullopt;
    const YAML::Node v = s[key];
    if (!v.IsScalar()) return std::nullopt;
    return v.Scalar();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

}  // namespace cedar
