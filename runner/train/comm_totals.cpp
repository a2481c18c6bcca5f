#include "runner/train/comm_totals.h"

#include <torch/torch.h>

#include <string>

namespace cedar {

std::vector<CommTotalRow> gather_comm_totals(const MeteredCommunicator& metered,
                                             Communicator& control) {
  const std::vector<std::string> ops = {"allreduce", "allgather", "allgatherv", "broadcast",
                                        "barrier"};
  auto local = torch::zeros({static_cast<int64_t>(ops.size()), 5}, torch::kDouble);
  for (size_t i = 0; i < ops.size(); ++i) {
    auto it = metered.totals().find(ops[i]);
    if (it == metered.totals().end()) continue;
    const CommCounters& c = it->second;
    local[i][0] = double(c.calls);
    local[i][1] = double(c.elements);
    local[i][2] = double(c.payload_bytes);
    local[i][3] = double(c.bus_bytes);
    local[i][4] = c.seconds;
  }
  auto all = control.allgather(local.reshape({-1})).view({control.size(), -1, 5});
  auto v = all.accessor<double, 3>();
  std::vector<CommTotalRow> rows;
  for (int r = 0; r < control.size(); ++r)
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto op = static_cast<int64_t>(i);
      if (v[r][op][0] == 0) continue;
      rows.push_back({r, ops[i], static_cast<int64_t>(v[r][op][0]),
                      static_cast<int64_t>(v[r][op][1]), static_cast<int64_t>(v[r][op][2]),
                      static_cast<int64_t>(v[r][op][3]), v[r][op][4]});
    }
  return rows;
}

}  // namespace cedar
