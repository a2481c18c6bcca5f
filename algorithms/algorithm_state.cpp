#include "algorithms/algorithm_state.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace cedar {

void save_tensor_map(AlgorithmState& out, const std::string& prefix,
                     const std::map<std::string, at::Tensor>& tensors) {
  for (const auto& [key, t] : tensors)
    if (t.defined()) out[prefix + key] = t.detach().clone();
}

void load_tensor_map(const AlgorithmState& in, const std::string& prefix,
                     std::map<std::string, at::Tensor>& tensors) {
  tensors.clear();
  for (auto it = in.lower_bound(prefix); it != in.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    tensors[it->first.substr(prefix.size())] = it->second.clone();
  }
}

void save_number(AlgorithmState& out, const std::string& key, double value) {
  out[key] = at::scalar_tensor(value, at::kDouble);
}

const at::Tensor& load_tensor(const AlgorithmState& in, const std::string& key) {
  auto it = in.find(key);
  if (it == in.end()) throw std::runtime_error("checkpoint: algorithm state has no '" + key + "'");
  return it->second;
}

double load_number(const AlgorithmState& in, const std::string& key) {
  return load_tensor(in, key).item<double>();
}

void save_numbers(AlgorithmState& out, const std::string& key, const std::vector<double>& values) {
  out[key] = at::tensor(values, at::kDouble);
}

std::vector<double> load_numbers(const AlgorithmState& in, const std::string& key) {
  at::Tensor t = load_tensor(in, key).to(at::kDouble).contiguous();
  const double* p = t.data_ptr<double>();
  return std::vector<double>(p, p + t.numel());
}

void save_number_map(AlgorithmState& out, const std::string& key,
                     const std::map<int64_t, double>& m) {
  std::vector<double> flat;
  for (const auto& [k, v] : m) {
    flat.push_back(static_cast<double>(k));
    flat.push_back(v);
  }
  out[key] = at::tensor(flat, at::kDouble).view({-1, 2});
}

std::map<int64_t, double> load_number_map(const AlgorithmState& in, const std::string& key) {
  std::vector<double> flat = load_numbers(in, key);
  std::map<int64_t, double> m;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) m[static_cast<int64_t>(flat[i])] = flat[i + 1];
  return m;
}

}  // namespace cedar
