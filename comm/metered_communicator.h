#pragma once
// Wraps a backend and records, per collective and rank: calls, elements, payload bytes (what this
// rank contributes), bus bytes (bus_bytes.h) and seconds. Per-step counters are read and reset by
// the trainer; per-operation totals cover the whole run.
#include <map>
#include <utility>

#include "comm/communicator.h"
#include "comm/network_model.h"

namespace cedar {

struct CommCounters {
  int64_t calls = 0;
  int64_t elements = 0;
  int64_t payload_bytes = 0;
  int64_t bus_bytes = 0;
  int64_t latency_steps = 0;  // alpha terms of the cost model (network_model.h)
  double seconds = 0;
  void add(const CommCounters& o);
};

class MeteredCommunicator final : public Communicator {
 public:
  explicit MeteredCommunicator(Communicator& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  at::Device device() const override { return inner_.device(); }
  void allreduce_sum(at::Tensor& t) override;
  at::Tensor allgather(const at::Tensor& t) override;
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override;
  void broadcast(at::Tensor& t, int root) override;
  void barrier() override;

  const CommCounters& step() const { return step_; }
  void reset_step() { step_ = CommCounters{}; }
  const std::map<std::string, CommCounters>& totals() const { return totals_; }
  // With a profile, every collective takes at least its modeled time on that network (the
  // difference is slept), so wall-clock follows the emulated network, collective by collective.
  void emulate(const NetworkProfile* profile) { emulate_ = profile; }
  // Continues a checkpointed run's totals.
  void restore_totals(std::map<std::string, CommCounters> totals) { totals_ = std::move(totals); }
  Communicator& inner() { return inner_; }

 private:
  void record(const char* op, int64_t elements, int64_t payload, int64_t bus, int64_t latency,
              double seconds);
  Communicator& inner_;
  const NetworkProfile* emulate_ = nullptr;
  CommCounters step_;
  std::map<std::string, CommCounters> totals_;
};

}  // namespace cedar
