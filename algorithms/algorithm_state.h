#pragma once
// Helpers for Algorithm::save_state / load_state: maps of tensors and plain numbers under a key
// prefix. Saved tensors are detached clones, so later steps cannot change a saved state.
#include <map>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"

namespace cedar {

void save_tensor_map(AlgorithmState& out, const std::string& prefix,
                     const std::map<std::string, at::Tensor>& tensors);
// Replaces `tensors` with every entry of `in` under `prefix`.
void load_tensor_map(const AlgorithmState& in, const std::string& prefix,
                     std::map<std::string, at::Tensor>& tensors);

void save_number(AlgorithmState& out, const std::string& key, double value);
// The number under `key`; throws std::runtime_error naming the key when it is missing.
double load_number(const AlgorithmState& in, const std::string& key);

void save_numbers(AlgorithmState& out, const std::string& key, const std::vector<double>& values);
std::vector<double> load_numbers(const AlgorithmState& in, const std::string& key);

// Maps such as bucket index -> last learning rate, as an [n, 2] double tensor.
void save_number_map(AlgorithmState& out, const std::string& key,
                     const std::map<int64_t, double>& m);
std::map<int64_t, double> load_number_map(const AlgorithmState& in, const std::string& key);

// The tensor under `key` (throws naming the key when missing).
const at::Tensor& load_tensor(const AlgorithmState& in, const std::string& key);

}  // namespace cedar
