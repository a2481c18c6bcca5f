#include "comm/metered_communicator.h"

#include <chrono>
#include <thread>

#include "comm/bus_bytes.h"
#include "comm/network_model.h"

namespace cedar {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
int64_t nbytes(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

}  // namespace

void CommCounters::add(const CommCounters& o) {
  calls += o.calls;
  elements += o.elements;
  payload_bytes += o.payload_bytes;
  bus_bytes += o.bus_bytes;
  latency_steps += o.latency_steps;
  seconds += o.seconds;
}

void MeteredCommunicator::record(const char* op, int64_t elements, int64_t payload, int64_t bus,
                                 int64_t latency, double seconds) {
  if (emulate_) {
    const double modeled = emulate_->seconds(latency, bus);
    if (modeled > seconds) {
      std::this_thread::sleep_for(std::chrono::duration<double>(modeled - seconds));
      seconds = modeled;
    }
  }
  CommCounters c{1, elements, payload, bus, latency, seconds};
  step_.add(c);
  totals_[op].add(c);
}

void MeteredCommunicator::allreduce_sum(at::Tensor& t) {
  auto t0 = Clock::now();
  inner_.allreduce_sum(t);
  int64_t b = nbytes(t);
  record("allreduce", t.numel(), size() > 1 ? b : 0, allreduce_bus_bytes(b, size()),
         allreduce_latency_steps(size()), since(t0));
}

at::Tensor MeteredCommunicator::allgather(const at::Tensor& t) {
  auto t0 = Clock::now();
  at::Tensor out = inner_.allgather(t);
  int64_t b = nbytes(t);
  record("allgather", t.numel(), size() > 1 ? b : 0, allgather_bus_bytes(b * size(), size()),
         allgather_latency_steps(size()), since(t0));
  return out;
}

std::vector<at::Tensor> MeteredCommunicator::allgatherv(const at::Tensor& t) {
  auto t0 = Clock::now();
  std::vector<at::Tensor> out = inner_.allgatherv(t);
  int64_t total = 0;
  for (const auto& p : out) total += nbytes(p);
  // The count exchange: one int64 per rank.
  int64_t counts = 8 * static_cast<int64_t>(size());
  int64_t payload = size() > 1 ? nbytes(t) + 8 : 0;
  // Two allgathers: the counts, then the data.
  record("allgatherv", t.numel(), payload, allgather_bus_bytes(total + counts, size()),
         2 * allgather_latency_steps(size()), since(t0));
  return out;
}

void MeteredCommunicator::broadcast(at::Tensor& t, int root) {
  auto t0 = Clock::now();
  inner_.broadcast(t, root);
  int64_t b = nbytes(t);
  record("broadcast", t.numel(), (size() > 1 && rank() == root) ? b : 0,
         broadcast_bus_bytes(b, size()), broadcast_latency_steps(size()), since(t0));
}

void MeteredCommunicator::barrier() {
  auto t0 = Clock::now();
  inner_.barrier();
  record("barrier", 0, 0, 0, allgather_latency_steps(size()), since(t0));
}

}  // namespace cedar
