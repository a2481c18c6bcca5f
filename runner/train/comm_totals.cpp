#include "runner/train/comm_totals.h"

#include <torch/torch.h>

#include <cstring>
#include <map>
#include <string>

namespace cedar {
namespace {

constexpr int64_t kFields = 5;  // calls, elements, payload bytes, bus bytes, seconds

// The operation names, '\n'-terminated, as bytes.
at::Tensor encode_names(const std::map<std::string, CommCounters>& totals) {
  std::string names;
  for (const auto& [op, c] : totals) names += op + "\n";
  at::Tensor bytes = torch::empty({static_cast<int64_t>(names.size())}, torch::kByte);
  if (!names.empty()) std::memcpy(bytes.data_ptr(), names.data(), names.size());
  return bytes;
}

std::vector<std::string> decode_names(const at::Tensor& bytes) {
  const auto* p = static_cast<const char*>(bytes.data_ptr());
  std::vector<std::string> names;
  std::string name;
  for (int64_t i = 0; i < bytes.numel(); ++i) {
    if (p[i] == '\n') {
      names.push_back(name);
      name.clear();
    } else {
      name += p[i];
    }
  }
  return names;
}

}  // namespace

std::vector<CommTotalRow> gather_comm_totals(const MeteredCommunicator& metered,
                                             Communicator& control) {
  // Ranks may have called different operations (a level's leaders only, a send without a
  // receive): the names travel with the values.
  const auto& totals = metered.totals();
  auto values = torch::zeros({static_cast<int64_t>(totals.size()), kFields}, torch::kDouble);
  int64_t i = 0;
  for (const auto& [op, c] : totals) {
    values[i][0] = double(c.calls);
    values[i][1] = double(c.elements);
    values[i][2] = double(c.payload_bytes);
    values[i][3] = double(c.bus_bytes);
    values[i][4] = c.seconds;
    ++i;
  }
  const std::vector<at::Tensor> all_names = control.allgatherv(encode_names(totals));
  const std::vector<at::Tensor> all_values = control.allgatherv(values.reshape({-1}));
  std::vector<CommTotalRow> rows;
  for (int r = 0; r < control.size(); ++r) {
    const std::vector<std::string> names = decode_names(all_names[static_cast<size_t>(r)]);
    const at::Tensor table = all_values[static_cast<size_t>(r)].view({-1, kFields});
    auto v = table.accessor<double, 2>();
    for (size_t k = 0; k < names.size(); ++k) {
      const auto op = static_cast<int64_t>(k);
      if (v[op][0] == 0) continue;
      rows.push_back({r, names[k], static_cast<int64_t>(v[op][0]), static_cast<int64_t>(v[op][1]),
                      static_cast<int64_t>(v[op][2]), static_cast<int64_t>(v[op][3]), v[op][4]});
    }
  }
  return rows;
}

}  // namespace cedar
