#include "comm/metered_communicator.h"

#include <chrono>
#include <sstream>
#include <thread>

#include "comm/bus_bytes.h"
#include "comm/device_stream.h"
#include "comm/network_model.h"

namespace cedar {
namespace {

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

MeteredCommunicator::MeteredCommunicator(std::unique_ptr<Communicator> inner,
                                         MeteredCommunicator& parent, std::string level)
    : owned_(std::move(inner)),
      inner_(*owned_),
      device_(inner_.device()),
      check_devices_(parent.check_devices_),
      parent_(&parent),
      level_(std::move(level)) {
  auto it = parent.level_profiles_.find(level_);
  emulate_ = it != parent.level_profiles_.end() ? it->second : parent.emulate_;
  level_profiles_ = parent.level_profiles_;
  scheme_ = allreduce_scheme_for_level(parent.scheme_, level_);
}

double MeteredCommunicator::clock() const {
  wait_for_device(device_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void MeteredCommunicator::wrong_device(const char* op, const at::Tensor& t) const {
  std::ostringstream what;
  what << "metered " << op << ": tensor of shape " << t.sizes() << ", "
       << c10::toString(t.scalar_type()) << ", on " << t.device() << ", but backend "
       << inner_.backend() << " works on " << device_ << " tensors";
  throw CommError(what.str());
}

double MeteredCommunicator::emulated(int64_t latency, int64_t bus, double seconds) const {
  if (!emulate_) return seconds;
  const double modeled = emulate_->seconds(latency, bus);
  if (modeled <= seconds) return seconds;
  std::this_thread::sleep_for(std::chrono::duration<double>(modeled - seconds));
  return modeled;
}

void MeteredCommunicator::record(const char* op, int64_t elements, int64_t payload, int64_t bus,
                                 int64_t latency, double seconds) {
  add(op, {1, elements, payload, bus, latency, emulated(latency, bus, seconds)});
}

void MeteredCommunicator::add(const char* op, const CommCounters& c) {
  step_.add(c);
  totals_[op].add(c);
  if (parent_) parent_->absorb(level_, op, c);
}

void MeteredCommunicator::absorb(const std::string& level, const std::string& op,
                                 const CommCounters& c) {
  step_.add(c);
  step_levels_[level].add(c);
  totals_[level + "/" + op].add(c);
  if (parent_) parent_->absorb(level_.empty() ? level : level_ + "/" + level, op, c);
}

void MeteredCommunicator::allreduce_sum(at::Tensor& t) {
  check_device("allreduce", t);
  if (scheme_ != AllreduceScheme::library && size() > 1) return allreduce_by_scheme(t);
  const double t0 = clock();
  inner_.allreduce_sum(t);
  int64_t b = nbytes(t);
  record("allreduce", t.numel(), size() > 1 ? b : 0, allreduce_bus_bytes(b, size()),
         allreduce_latency_steps(size()), clock() - t0);
}

at::Tensor MeteredCommunicator::allgather(const at::Tensor& t) {
  check_device("allgather", t);
  const double t0 = clock();
  at::Tensor out = inner_.allgather(t);
  int64_t b = nbytes(t);
  record("allgather", t.numel(), size() > 1 ? b : 0, allgather_bus_bytes(b * size(), size()),
         allgather_latency_steps(size()), clock() - t0);
  return out;
}

std::vector<at::Tensor> MeteredCommunicator::allgatherv(const at::Tensor& t) {
  check_device("allgatherv", t);
  const double t0 = clock();
  std::vector<at::Tensor> out = inner_.allgatherv(t);
  int64_t total = 0;
  for (const auto& p : out) total += nbytes(p);
  // The count exchange: one int64 per rank.
  int64_t counts = 8 * static_cast<int64_t>(size());
  int64_t payload = size() > 1 ? nbytes(t) + 8 : 0;
  // Two allgathers: the counts, then the data.
  record("allgatherv", t.numel(), payload, allgather_bus_bytes(total + counts, size()),
         2 * allgather_latency_steps(size()), clock() - t0);
  return out;
}

void MeteredCommunicator::broadcast(at::Tensor& t, int root) {
  check_device("broadcast", t);
  const double t0 = clock();
  inner_.broadcast(t, root);
  int64_t b = nbytes(t);
  record("broadcast", t.numel(), (size() > 1 && rank() == root) ? b : 0,
         broadcast_bus_bytes(b, size()), broadcast_latency_steps(size()), clock() - t0);
}

void MeteredCommunicator::send(const at::Tensor& t, int peer, int tag) {
  check_device("send", t);
  const double t0 = clock();
  inner_.send(t, peer, tag);
  const int64_t b = nbytes(t);
  record("send", t.numel(), b, b, 1, clock() - t0);
}

void MeteredCommunicator::post(const at::Tensor& t, int peer, int tag) {
  check_device("post", t);
  const double t0 = clock();
  inner_.post(t, peer, tag);
  const int64_t b = nbytes(t);
  // Counted as the send it is. Not emulated: it returns at once by definition, and the receive
  // lasts at least the modeled time of what it received.
  add("send", {1, t.numel(), b, b, 1, clock() - t0});
}

void MeteredCommunicator::wait_posted() { inner_.wait_posted(); }

void MeteredCommunicator::recv(at::Tensor& t, int peer, int tag) {
  check_device("recv", t);
  const double t0 = clock();
  inner_.recv(t, peer, tag);
  record_received("recv", t, clock() - t0);
}

int MeteredCommunicator::recv_any(at::Tensor& t, int tag) {
  check_device("recv_any", t);
  const double t0 = clock();
  const int sender = inner_.recv_any(t, tag);
  record_received("recv_any", t, clock() - t0);
  return sender;
}

int MeteredCommunicator::recv_any_up_to(at::Tensor& t, int tag, int64_t& received) {
  check_device("recv_any_up_to", t);
  const double t0 = clock();
  const int sender = inner_.recv_any_up_to(t, tag, received);
  record_received("recv_any", t.reshape({-1}).narrow(0, 0, received), clock() - t0);
  return sender;
}

void MeteredCommunicator::record_received(const char* op, const at::Tensor& t, double seconds) {
  // The sender counts the bytes; the receive cannot end before they could have arrived.
  add(op, {1, t.numel(), 0, 0, 0, emulated(1, nbytes(t), seconds)});
}

void MeteredCommunicator::sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source,
                                   int tag) {
  check_device("sendrecv", out);
  check_device("sendrecv", in);
  const double t0 = clock();
  inner_.sendrecv(out, dest, in, source, tag);
  const int64_t b = dest == rank() ? 0 : nbytes(out);
  record("sendrecv", out.numel(), b, b, b > 0 ? 1 : 0, clock() - t0);
}

std::unique_ptr<Communicator> MeteredCommunicator::split(int color, int key,
                                                         const std::string& level) {
  const double t0 = clock();
  std::unique_ptr<Communicator> part = inner_.split(color, key, level);
  // Forming the communicator exchanges (color, key) among every rank: an allgather of 8 bytes.
  const int64_t b = size() > 1 ? 8 : 0;
  record("split", 0, b, allgather_bus_bytes(8 * int64_t{size()}, size()),
         allgather_latency_steps(size()), clock() - t0);
  level_ranks_[level] = part->size();
  return std::make_unique<MeteredCommunicator>(std::move(part), *this, level);
}

void MeteredCommunicator::barrier() {
  const double t0 = clock();
  inner_.barrier();
  record("barrier", 0, 0, 0, allgather_latency_steps(size()), clock() - t0);
}

}  // namespace cedar
