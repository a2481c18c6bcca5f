#include "comm/average.h"

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <utility>

#include "comm/communicator.h"

namespace cedar {

void average_in_place(const std::vector<at::Tensor>& tensors, Communicator& comm) {
  std::map<std::pair<int, std::string>, std::vector<at::Tensor>> groups;
  for (const auto& t : tensors)
    groups[{static_cast<int>(t.scalar_type()), t.device().str()}].push_back(t);
  for (auto& [key, group] : groups) {
    std::vector<at::Tensor> flat;
    for (const auto& t : group) flat.push_back(t.detach().reshape({-1}));
    // Summed where the communicator's tensors live (e.g. CUDA parameters over a CPU channel),
    // and written back to the tensors' own device.
    at::Tensor buf = at::cat(flat).to(comm.device());
    comm.allreduce_sum(buf);
    buf.div_(static_cast<double>(comm.size()));
    int64_t off = 0;
    for (const auto& t : group) {
      t.detach().copy_(buf.narrow(0, off, t.numel()).view_as(t));
      off += t.numel();
    }
  }
}

}  // namespace cedar
