#pragma once
// The arithmetic precision a run trained in (train.amp of its resolved configuration, runs.config)
// for the reports: a run under mixed precision is not comparable digit for digit with an fp32
// one, so the comparison table names such runs. No LibTorch here.
#include <string>
#include <utility>
#include <vector>

namespace cedar {

// train.amp of a run's resolved configuration: off, bf16 or fp16; "off" when the configuration
// has none (fp32 runs, and runs recorded before the key existed) or cannot be read.
std::string amp_of(const std::string& config_yaml);

// For the comparison table's legend: the (run name, train.amp) pairs whose amp is not off, as
// one sentence; "" when every run trained in fp32.
std::string precision_legend(const std::vector<std::pair<std::string, std::string>>& runs);

}  // namespace cedar
