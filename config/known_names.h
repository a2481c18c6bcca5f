#pragma once
// The names `model.name`, `data.name`, `network.profile` and `network.allreduce` accept, checked
// when a configuration is loaded, before anything is built. The catalogs that build them
// (models/registry.cpp, datasets/registry.cpp, comm/network_model.cpp) sit in layers above the
// configuration, so the names are listed here too; tests/unit/bad_config_test.cpp checks that the
// lists equal the catalogs. Inline, so that every target compiling config/experiment_config.cpp
// (the fuzz targets too) has them.
#include <string>
#include <vector>

namespace cedar {

inline const std::vector<std::string>& known_model_names() {
  static const std::vector<std::string> kNames = {"resnet20",  "resnet32", "resnet44", "resnet56",
                                                  "resnet110", "resnet18", "resnet34", "resnet50",
                                                  "vgg11",     "vgg13",    "vgg16",    "vgg19",
                                                  "lenet5",    "linear",   "logistic"};
  return kNames;
}

inline const std::vector<std::string>& known_dataset_names() {
  static const std::vector<std::string> kNames = {"cifar10",
                                                  "cifar100",
                                                  "mnist",
                                                  "fashion-mnist",
                                                  "imagenet-folder",
                                                  "synthetic",
                                                  "synthetic-regression",
                                                  "sign-counterexample"};
  return kNames;
}

inline const std::vector<std::string>& known_network_profile_names() {
  static const std::vector<std::string> kNames = {"1gbe", "10gbe", "25gbe", "100gbe", "ib-hdr"};
  return kNames;
}

// network.intra_profile: these (comm/network_model.cpp's intra_node_profiles()) or a network's.
inline const std::vector<std::string>& known_intra_profile_names() {
  static const std::vector<std::string> kNames = {"shm", "nvlink"};
  return kNames;
}

// network.allreduce: comm/network_model.cpp's allreduce_scheme_names().
inline const std::vector<std::string>& known_allreduce_scheme_names() {
  static const std::vector<std::string> kNames = {"library", "ring", "halving_doubling", "tree",
                                                  "two_level"};
  return kNames;
}

// "a, b, c": the names for a message.
inline std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace cedar
