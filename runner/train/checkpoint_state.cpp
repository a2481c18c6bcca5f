#include "runner/train/checkpoint_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cstring>
#include <map>
#include <stdexcept>

namespace cedar {

at::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const at::Tensor& t) {
  auto c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()),
                     static_cast<size_t>(c.numel()));
}

const at::Tensor& need(const TensorMap& state, const std::string& key) {
  auto it = state.find(key);
  if (it == state.end())
    throw std::runtime_error("checkpoint: no '" + key +
                             "' (written by a different model or configuration?)");
  return it->second;
}

void copy_into(const at::Tensor& dst, const at::Tensor& src, const std::string& key) {
  if (!dst.sizes().equals(src.sizes()))
    throw std::runtime_error("checkpoint: '" + key + "' has shape " + std::to_string(src.dim()) +
                             "-d " + std::to_string(src.numel()) + " elements, the model's has " +
                             std::to_string(dst.numel()));
  dst.copy_(src);
}

void save_buffers(TensorMap& state, const std::string& prefix,
                  const std::vector<at::Tensor>& buffers) {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].defined()) state[prefix + std::to_string(i)] = buffers[i].cpu().clone();
}

void restore_buffers(const TensorMap& state, const std::string& prefix,
                     const std::vector<NamedTensor>& params, std::vector<at::Tensor>& buffers) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    auto it = state.find(prefix + std::to_string(i));
    if (it != state.end()) buffers[i] = it->second.to(params[i].tensor.device()).clone();
  }
}

void save_cpu_rng(TensorMap& state) {
  state["rng.cpu"] = at::detail::getDefaultCPUGenerator().get_state();
}

void restore_cpu_rng(const TensorMap& state) {
  at::Generator cpu_gen = at::detail::getDefaultCPUGenerator();
  cpu_gen.set_state(need(state, "rng.cpu"));
}

void save_comm_totals(TensorMap& state, const MeteredCommunicator& comm) {
  for (const auto& [op, c] : comm.totals()) {
    state["comm." + op] = torch::tensor(
        {c.calls, c.elements, c.payload_bytes, c.bus_bytes, c.latency_steps}, torch::kInt64);
    state["comm." + op + ".seconds"] = torch::scalar_tensor(c.seconds, torch::kDouble);
  }
}

void restore_comm_totals(const TensorMap& state, MeteredCommunicator& comm) {
  std::map<std::string, CommCounters> totals;
  for (const auto& [key, t] : state) {
    const bool seconds = key.size() > 8 && key.compare(key.size() - 8, 8, ".seconds") == 0;
    if (key.rfind("comm.", 0) != 0 || seconds) continue;
    const std::string op = key.substr(5);
    auto v = t.contiguous();
    if (v.scalar_type() != at::kLong || v.numel() != 5)
      throw std::runtime_error("checkpoint: '" + key + "' is not 5 int64 counters");
    const int64_t* c = v.data_ptr<int64_t>();
    CommCounters& counters = totals[op];
    counters.calls = c[0];
    counters.elements = c[1];
    counters.payload_bytes = c[2];
    counters.bus_bytes = c[3];
    counters.latency_steps = c[4];
    counters.seconds = need(state, key + ".seconds").item<double>();
  }
  comm.restore_totals(std::move(totals));
}

}  // namespace cedar
