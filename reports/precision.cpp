#include "reports/precision.h"

#include "reports/run_config.h"

namespace cedar {

std::string amp_of(const std::string& config_yaml) {
  return config_scalar(config_yaml, "train", "amp").value_or("off");
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
