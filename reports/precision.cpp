#include "reports/precision.h"

#include <yaml-cpp/yaml.h>

namespace cedar {

std::string amp_of(const std::string& config_yaml) {
  try {
    const YAML::Node root = YAML::Load(config_yaml);
    if (!root.IsMap()) return "off";
    const YAML::Node train = root["train"];
    if (!train.IsMap()) return "off";
    const YAML::Node amp = train["amp"];
    return amp.IsScalar() ? amp.Scalar() : "off";
  } catch (const YAML::Exception&) {
    return "off";
  }
}

std::string precision_legend(const std::vector<std::pair<std::string, std::string>>& runs) {
  std::string named;
  for (const auto& [name, amp] : runs) {
    if (amp == "off") continue;
    named += (named.empty() ? "" : ", ") + name + " " + amp;
  }
  if (named.empty()) return "";
  return "Mixed precision (train.amp; forward pass and evaluation under autocast, fp16 with "
         "dynamic loss scaling): " +
         named + "; the other runs trained in fp32.";
}

}  // namespace cedar
