#pragma once
// Runs written through the results Store API with fixed rows, as the trainer and the metering
// layer would have written them (per-step α terms and bus bytes follow
// comm/metered_communicator.cpp), for tests of the reports.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "comm/bus_bytes.h"
#include "comm/network_model.h"
#include "results/store.h"

namespace cedar::fixture {

struct CollectiveSpec {
  std::string op;  // allreduce, allgather, allgatherv, broadcast
  int64_t calls_per_step = 1;
  std::vector<int64_t>
      payload_per_rank;  // bytes each rank contributes per call (allgatherv: with its 8-byte count)
};

struct RunSpec {
  std::string suite = "test", name, algorithm, model = "resnet20", dataset = "cifar10";
  int64_t world_size = 2, seed = 1, steps_per_epoch = 10, epochs = 2;
  double compute_seconds = 0.125;  // per step
  int64_t dense_bytes = 0;         // per step: the dense fp32 allreduce equivalent
  std::vector<CollectiveSpec> collectives;
  std::string status = "completed";
  double final_accuracy = 0, best_accuracy = 0, wall_seconds = 0;
  int64_t batch_size = 0;                        // > 0: written into the config as train.batch_size
  std::string amp;                               // not empty: written into the config as train.amp
  std::vector<std::pair<double, double>> evals;  // (wall seconds, test accuracy) at each epoch end
};

struct CallCost {
  int64_t bus = 0, latency = 0;
};

// What the metering layer records for one call of `c` on `rank` of `world` ranks.
inline CallCost metered_call(const CollectiveSpec& c, int world, int rank) {
  const int64_t own = c.payload_per_rank[static_cast<size_t>(rank)];
  if (c.op == "allreduce") return {allreduce_bus_bytes(own, world), allreduce_latency_steps(world)};
  if (c.op == "allgather")
    return {allgather_bus_bytes(own * world, world), allgather_latency_steps(world)};
  if (c.op == "allgatherv") {
    int64_t total = 0;
    for (int64_t p : c.payload_per_rank) total += p - 8;
    return {allgather_bus_bytes(total + 8 * world, world), 2 * allgather_latency_steps(world)};
  }
  return {broadcast_bus_bytes(c.payload_per_rank[0], world), broadcast_latency_steps(world)};
}

inline int64_t write_run(ResultStore& store, const RunSpec& s) {
  RunRecord rec;
  rec.suite = s.suite;
  rec.name = s.name;
  rec.algorithm = s.algorithm;
  rec.model = s.model;
  rec.dataset = s.dataset;
  rec.world_size = s.world_size;
  rec.seed = s.seed;
  rec.config = "name: " + s.name + "\nseed: " + std::to_string(s.seed);
  std::string train;
  if (s.batch_size > 0) train += "\n  batch_size: " + std::to_string(s.batch_size);
  if (!s.amp.empty()) train += "\n  amp: " + s.amp;
  if (!train.empty()) rec.config += "\ntrain:" + train;
  rec.config_hash = stable_hash(rec.config + std::to_string(s.world_size));
  rec.code_version = "test";
  rec.host = "host";
  rec.backend = "mpi";
  rec.network = "1gbe";
  const int64_t id = store.begin_run(rec);
  const int world = static_cast<int>(s.world_size);

  int64_t payload = 0, payload_all = 0, bus = 0, latency = 0;
  for (const auto& c : s.collectives) {
    for (int r = 0; r < world; ++r)
      payload_all += c.calls_per_step * c.payload_per_rank[static_cast<size_t>(r)];
    payload += c.calls_per_step * c.payload_per_rank[0];
    CallCost cost = metered_call(c, world, 0);
    bus += c.calls_per_step * cost.bus;
    latency += c.calls_per_step * cost.latency;
  }
  const NetworkProfile& net = find_network_profile("1gbe");
  int64_t step = 0;
  RunSummary summary;
  for (int64_t e = 0; e < s.epochs; ++e) {
    for (int64_t i = 0; i < s.steps_per_epoch; ++i, ++step) {
      StepRow row;
      row.step = step;
      row.epoch = e;
      row.compute_seconds = s.compute_seconds;
      row.wall_seconds = double(step + 1) * s.compute_seconds;
      row.payload_bytes = payload;
      row.bus_bytes = bus;
      row.payload_bytes_all = payload_all;
      row.cum_payload_bytes = (step + 1) * payload;
      row.cum_bus_bytes = (step + 1) * bus;
      row.dense_bytes = s.dense_bytes;
      row.train_loss = 1.0;
      row.learning_rate = 0.1;
      row.latency_steps = latency;
      row.modeled_comm_seconds = net.seconds(latency, bus);
      store.add_step(id, row);
    }
    if (e < static_cast<int64_t>(s.evals.size())) {
      EvalRow ev;
      ev.step = step;
      ev.epoch = double(e + 1);
      ev.wall_seconds = s.evals[static_cast<size_t>(e)].first;
      ev.test_accuracy = s.evals[static_cast<size_t>(e)].second;
      ev.cum_payload_bytes = step * payload;
      ev.cum_bus_bytes = step * bus;
      store.add_eval(id, ev);
    }
  }
  if (s.status != "failed") {  // a failed run never reaches the comm_totals write
    std::vector<CommTotalRow> totals;
    const int64_t steps = s.steps_per_epoch * s.epochs;
    for (int r = 0; r < world; ++r)
      for (const auto& c : s.collectives) {
        const int64_t calls = c.calls_per_step * steps;
        const int64_t own = c.payload_per_rank[static_cast<size_t>(r)];
        totals.push_back({r, c.op, calls, calls * own / 4, calls * own,
                          calls * metered_call(c, world, r).bus, 0.001 * double(calls)});
      }
    store.add_comm_totals(id, totals);
  }
  summary.final_test_accuracy = s.final_accuracy;
  summary.best_test_accuracy = s.best_accuracy;
  summary.wall_seconds = s.wall_seconds;
  summary.total_payload_bytes = step * payload;
  summary.total_bus_bytes = step * bus;
  store.finish_run(id, s.status, s.status == "failed" ? "killed" : "", summary);
  return id;
}

}  // namespace cedar::fixture
