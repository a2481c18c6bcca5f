#include "runner/train/machine_load.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace cedar {

std::vector<HostLoad> summarise_host_load(const std::vector<RankCpu>& ranks) {
  std::vector<HostLoad> hosts;
  for (const auto& r : ranks) {
    if (!r.machine_known) continue;
    auto it = std::find_if(hosts.begin(), hosts.end(),
                           [&](const HostLoad& h) { return h.host == r.host; });
    if (it == hosts.end()) {
      HostLoad h;
      h.host = r.host;
      h.capacity_seconds = r.machine_total_seconds;
      h.other_seconds = r.machine_busy_seconds;  // the run's share is taken off below
      hosts.push_back(h);
      it = hosts.end() - 1;
    }
    ++it->ranks;
    it->run_seconds += r.process_seconds;
  }
  for (auto& h : hosts) h.other_seconds = std::max(0.0, h.other_seconds - h.run_seconds);
  return hosts;
}

std::string host_load_json(const std::vector<HostLoad>& hosts) {
  nlohmann::json list = nlohmann::json::array();
  double worst = 0;
  for (const auto& h : hosts) {
    list.push_back({{"host", h.host},
                    {"ranks", h.ranks},
                    {"capacity_s", h.capacity_seconds},
                    {"run_cpu_s", h.run_seconds},
                    {"other_cpu_s", h.other_seconds},
                    {"other_share", h.other_share()}});
    worst = std::max(worst, h.other_share());
  }
  return nlohmann::json{{"hosts", list}, {"max_other_share", worst}}.dump();
}

std::vector<RankCpu> gather_rank_cpu(const CpuTimeSample& start, const CpuTimeSample& end,
                                     const std::string& host, Communicator& control) {
  const bool known = start.machine_known && end.machine_known;
  at::Tensor values =
      torch::tensor({known ? 1.0 : 0.0, end.machine_busy_seconds - start.machine_busy_seconds,
                     end.machine_total_seconds - start.machine_total_seconds,
                     end.process_seconds - start.process_seconds},
                    torch::kDouble);
  at::Tensor name = torch::empty({static_cast<int64_t>(host.size())}, torch::kByte);
  if (!host.empty()) std::memcpy(name.data_ptr(), host.data(), host.size());
  const std::vector<at::Tensor> names = control.allgatherv(name);
  const std::vector<at::Tensor> all = control.allgatherv(values);
  std::vector<RankCpu> out;
  for (size_t r = 0; r < all.size(); ++r) {
    auto v = all[r].accessor<double, 1>();
    RankCpu c;
    c.host.assign(static_cast<const char*>(names[r].data_ptr()),
                  static_cast<size_t>(names[r].numel()));
    c.machine_known = v[0] != 0;
    c.machine_busy_seconds = v[1];
    c.machine_total_seconds = v[2];
    c.process_seconds = v[3];
    out.push_back(c);
  }
  return out;
}

}  // namespace cedar
