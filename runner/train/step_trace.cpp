#include "runner/train/step_trace.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

namespace cedar {

std::unique_ptr<StepTrace> StepTrace::from_environment(int rank) {
  const char* dir = std::getenv("CEDAR_TRACE_DIR");
  if (!dir || !*dir) return nullptr;
  return std::unique_ptr<StepTrace>(
      new StepTrace(std::string(dir) + "/rank" + std::to_string(rank) + ".pt"));
}

AlgorithmState StepTrace::injected_state() {
  AlgorithmState state;
  const char* file = std::getenv("CEDAR_TRACE_INJECT");
  if (!file || !*file) return state;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("CEDAR_TRACE_INJECT: cannot read '") + file + "'");
  const std::vector<char> data((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
  const c10::IValue value = torch::pickle_load(data);
  if (!value.isGenericDict())
    throw std::runtime_error(std::string("CEDAR_TRACE_INJECT: '") + file +
                             "' does not hold a dictionary of tensors");
  for (const auto& kv : value.toGenericDict())
    state[kv.key().toStringRef()] = kv.value().toTensor();
  return state;
}

void StepTrace::initial(const std::vector<NamedTensor>& params,
                        const std::vector<NamedTensor>& buffers) {
  for (const auto* list : {&params, &buffers})
    for (const auto& t : *list) entries_.emplace_back("init." + t.name, t.tensor.detach().clone());
}

void StepTrace::step(const at::Tensor& images, const at::Tensor& labels, double loss) {
  const std::string step = std::to_string(losses_.size());
  entries_.emplace_back("x." + step, images.detach().cpu().clone());
  entries_.emplace_back("y." + step, labels.detach().cpu().clone());
  losses_.push_back(loss);
}

void StepTrace::gradients(const std::vector<NamedTensor>& params,
                          const std::vector<GradBucket>& buckets) {
  std::map<std::string, at::Tensor> grad_of;
  for (const auto& b : buckets)
    for (const auto& e : b.entries) grad_of[e.name] = e.grad;
  std::vector<at::Tensor> flat;
  for (const auto& p : params) flat.push_back(grad_of.at(p.name).detach().cpu().reshape({-1}));
  entries_.emplace_back("grad." + std::to_string(losses_.size()), torch::cat(flat));
}

void StepTrace::finish(const std::vector<NamedTensor>& params,
                       const std::vector<NamedTensor>& buffers, const AlgorithmState& algorithm) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [key, t] : entries_) dict.insert(key, t.cpu());
  for (const auto* list : {&params, &buffers})
    for (const auto& t : *list) dict.insert("final." + t.name, t.tensor.detach().cpu().clone());
  for (const auto& [key, t] : algorithm) dict.insert("algorithm." + key, t.detach().cpu());
  dict.insert("loss", torch::tensor(losses_, torch::kDouble));
  const std::vector<char> data = torch::pickle_save(c10::IValue(dict));
  std::ofstream out(path_, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw std::runtime_error("CEDAR_TRACE_DIR: cannot write '" + path_ + "'");
}

}  // namespace cedar
