#pragma once
// Tests run once per registered algorithm: the names to instantiate them with, and the test-name
// suffix gtest needs (letters, digits and '_' only).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/algorithm.h"

namespace cedar::testing {

// Every registered algorithm, in registration order.
inline std::vector<std::string> registered_algorithm_names() {
  std::vector<std::string> names;
  for (const auto& a : algorithm_catalog()) names.push_back(a.name);
  return names;
}

// "local-sgd" -> "local_sgd", for INSTANTIATE_TEST_SUITE_P's name generator.
inline std::string algorithm_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

}  // namespace cedar::testing
