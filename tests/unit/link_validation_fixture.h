#pragma once
// Runs "measured on shaped links" written through the results store with the per-step seconds,
// α terms and bus bytes a test chooses, and network profile files as `cedar network calibrate
// --cluster virtual` writes them, for the tests of `cedar network validate`
// (tests/unit/link_validation_test.cpp, tests/e2e/validation_fixture_writer.cpp).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "comm/network_model.h"
#include "results/store.h"

namespace cedar::link_fixture {

struct Step {
  double compute = 0, comm = 0;        // seconds
  int64_t latency = 0, bus_bytes = 0;  // rank 0's α terms and bus bytes
};

// A collective every rank makes (a level's "inter/..." only the ranks in RunSpec::inter_ranks).
struct Op {
  std::string op;
  int64_t calls_per_step = 1;
  int64_t payload_per_rank = 0;  // bytes a rank contributes per call
  int64_t rank0_bus_per_call = 0;
  int64_t calls_in_run = 0;  // > 0: the calls over the whole run (instead of per step × steps)
};

struct Fit {
  std::string op;
  int world = 2;
  AlphaBeta fit;
};

struct RunSpec {
  std::string name, algorithm;
  int world_size = 2;
  std::string links;  // the provenance's "links" object as JSON ("": run on the machine's links)
  std::vector<Step> steps;
  std::vector<Op> ops;
  std::vector<std::vector<StepLevelRow>> levels;  // per step (empty: none)
  std::vector<int> inter_ranks;                   // ranks of level "inter" (the node leaders)
  int servers = 0;           // parameter-server ranks (rank < servers); the rest are workers
  int64_t server_sends = 0;  // bytes the servers send per step (their replies)
  std::string suite = "validation";
  int seed = 1;  // repeated runs of one name differ by seed, as a suite's do
};

inline RunSpec run_spec(const std::string& name, const std::string& algorithm, int world_size,
                        const std::string& links) {
  RunSpec s;
  s.name = name;
  s.algorithm = algorithm;
  s.world_size = world_size;
  s.links = links;
  return s;
}

inline std::string links(int hosts, int ranks_per_host, const std::string& rate,
                         const std::string& burst = "256kb") {
  return "{\"cluster\":\"virtual\",\"hosts\":" + std::to_string(hosts) +
         ",\"ranks_per_host\":" + std::to_string(ranks_per_host) + ",\"rate\":\"" + rate +
         "\",\"burst\":\"" + burst +
         "\",\"latency\":\"100ms\",\"qdisc\":\"tbf\",\"subnet\":\"10.213.0.0/24\"}";
}

// `dir` ends with '/'.
inline std::string fresh_db(const std::string& dir, const std::string& name) {
  const std::string path = dir + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

// A profile file <dir><name>.yaml of one profile calibrated on `hosts` x `ranks_per_host` at
// `rate` with `np` ranks, with `fits`; its default α and β the first fit's. Returns its path.
inline std::string profile_file(const std::string& dir, const std::string& name, int hosts,
                                int ranks_per_host, const std::string& rate, int np,
                                const std::vector<Fit>& fits) {
  const std::string path = dir + name + ".yaml";
  auto plural = [](int n, const char* w) {
    return std::to_string(n) + " " + w + (n == 1 ? "" : "s");
  };
  std::ofstream out(path);
  char buf[128];
  out << "networks:\n  - name: " << name << "\n";
  std::snprintf(buf, sizeof buf, "    alpha: %.15g\n    beta: %.15g\n", fits[0].fit.alpha,
                fits[0].fit.beta);
  out << buf << "    measured_on: \"virtual cluster: " << plural(hosts, "host") << " x "
      << plural(ranks_per_host, "rank") << ", " << rate
      << " full duplex per host (tbf, burst 256kb), " << np << " ranks\"\n    collectives:\n";
  // One line per op, its fits at each P in the order given.
  std::vector<std::string> ops;
  std::map<std::string, std::string> entries;
  for (const Fit& f : fits) {
    std::snprintf(buf, sizeof buf, "%d: {alpha: %.15g, beta: %.15g}", f.world, f.fit.alpha,
                  f.fit.beta);
    std::string& entry = entries[f.op];
    if (entry.empty()) ops.push_back(f.op);
    entry += (entry.empty() ? "" : ", ") + std::string(buf);
  }
  for (const std::string& op : ops) out << "      " << op << ": {" << entries[op] << "}\n";
  return path;
}

inline int64_t write_run(ResultStore& store, const RunSpec& s) {
  RunRecord rec;
  rec.suite = s.suite;
  rec.name = s.name;
  rec.algorithm = s.algorithm;
  rec.model = "vgg16";
  rec.dataset = "synthetic";
  rec.world_size = s.world_size;
  rec.seed = s.seed;
  rec.config = "name: " + s.name + "\nseed: " + std::to_string(s.seed);
  rec.config_hash = stable_hash(rec.config + std::to_string(s.world_size) + s.links);
  rec.code_version = "test";
  rec.host = "host";
  rec.backend = "mpi";
  rec.network = "10gbe";
  rec.provenance = s.links.empty() ? R"({"command":"cedar run"})"
                                   : R"({"command":"cedar run","links":)" + s.links + "}";
  rec.servers = s.servers;
  rec.workers = s.world_size - s.servers;
  const int64_t id = store.begin_run(rec);
  int64_t payload = 0;  // one rank's, per step
  for (const Op& o : s.ops)
    if (o.calls_in_run == 0) payload += o.calls_per_step * o.payload_per_rank;
  const int64_t steps = static_cast<int64_t>(s.steps.size());
  double wall = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const Step& st = s.steps[size_t(i)];
    StepRow row;
    row.step = i;
    wall += st.compute + st.comm;
    row.wall_seconds = wall;
    row.compute_seconds = st.compute;
    row.comm_seconds = st.comm;
    row.latency_steps = st.latency;
    row.bus_bytes = st.bus_bytes;
    row.payload_bytes = payload;
    row.payload_bytes_all = payload * (s.world_size - s.servers);
    row.train_loss = 1;
    if (s.servers > 0) row.stats = {{"gradients", double(s.world_size - s.servers)}};
    if (size_t(i) < s.levels.size()) row.levels = s.levels[size_t(i)];
    store.add_step(id, row);
  }
  std::vector<CommTotalRow> totals;
  for (int r = 0; r < s.world_size; ++r) {
    if (r < s.servers) {
      totals.push_back({r, "send", 2 * steps, s.server_sends * steps / 4, s.server_sends * steps,
                        s.server_sends * steps, 0.01});
      continue;
    }
    for (const Op& o : s.ops) {
      const bool inter = o.op.rfind("inter/", 0) == 0;
      bool leader = s.inter_ranks.empty();
      for (int l : s.inter_ranks) leader = leader || l == r;
      if (inter && !leader) continue;
      const int64_t calls = o.calls_in_run > 0 ? o.calls_in_run : o.calls_per_step * steps;
      totals.push_back({r, o.op, calls, calls * o.payload_per_rank / 4, calls * o.payload_per_rank,
                        calls * o.rank0_bus_per_call, 0.01});
    }
  }
  store.add_comm_totals(id, totals);
  RunSummary summary;
  summary.wall_seconds = wall;
  store.finish_run(id, "completed", "", summary);
  return id;
}

}  // namespace cedar::link_fixture
