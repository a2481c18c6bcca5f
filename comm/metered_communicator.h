#pragma once
// Wraps a backend and records, per collective and rank: calls, elements, payload bytes (what this
// rank contributes), bus bytes (bus_bytes.h) and seconds. Per-step counters are read and reset by
// the trainer; per-operation totals cover the whole run.
//
// Point-to-point messages: a send or a sendrecv counts the bytes this rank sends as payload and
// as bus bytes, and one latency step (one alpha per message); a recv counts no bytes (its sender
// counts them) but, when emulating, lasts at least the modeled time of the bytes it received.
//
// Allreduce schemes (use_allreduce; comm/allreduce_algorithms.h): with a scheme other than
// library, allreduce_sum runs it over the backend's point-to-point messages and records one
// "allreduce" whose payload is the tensor's bytes (what this rank contributes, as before) and
// whose bus bytes and latency steps are what this rank really sent: the bytes of its messages
// and their number. Ring and halving-doubling on a power of two send the same on every rank (the
// ring formulas of bus_bytes.h for a count the ranks divide); tree and two_level do not (a leaf
// sends once), so a rank's counters are its own link's traffic while comm/network_model.h costs
// the critical path. When emulating, each message lasts its modeled time, so the collective
// lasts its own critical path. two_level records its two levels as sub-communicators' traffic
// is recorded: level "intra" (every rank: the tree inside its node, payload the tensor's bytes,
// R ranks) and level "inter" (the leaders only: their ring, payload the tensor's bytes, P/R
// ranks), emulated on those levels' profiles. Sub-communicators split from this one run
// allreduce_scheme_for_level (network_model.h) of the scheme.
//
// Sub-communicators (split) are metered too: their traffic counts in their own counters and in
// their parent's, under the operation name "<level>/<op>" (e.g. "inter/allgatherv") and in the
// parent's per-level step counters; when emulating, each level uses its own network profile.
//
// On a device with streams (CUDA) each operation's clock starts and stops once the device's
// current stream has finished its queued work, so that the seconds are the operation's, as on the
// CPU: not the compute queued before it, and not merely the enqueueing of an NCCL call.
//
// Device check: every tensor handed over must live on the inner communicator's device(); when on
// (the default in debug builds, NDEBUG unset; off in release builds, whose steps then pay
// nothing) a tensor elsewhere is a CommError naming the operation and the tensor.
#include <map>
#include <memory>
#include <string>
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

#ifdef NDEBUG
inline constexpr bool kCheckDevicesByDefault = false;
#else
inline constexpr bool kCheckDevicesByDefault = true;
#endif

class MeteredCommunicator final : public Communicator {
 public:
  explicit MeteredCommunicator(Communicator& inner, bool check_devices = kCheckDevicesByDefault)
      : inner_(inner), device_(inner.device()), check_devices_(check_devices) {}
  // A sub-communicator of `parent` for traffic of level `level`; owns its backend.
  MeteredCommunicator(std::unique_ptr<Communicator> inner, MeteredCommunicator& parent,
                      std::string level);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  at::Device device() const override { return inner_.device(); }
  void allreduce_sum(at::Tensor& t) override;
  at::Tensor allgather(const at::Tensor& t) override;
  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override;
  void broadcast(at::Tensor& t, int root) override;
  void barrier() override;
  void send(const at::Tensor& t, int peer, int tag = 0) override;
  void recv(at::Tensor& t, int peer, int tag = 0) override;
  // Counted as a send (op "send"), but never slept for when emulating: it returns at once, and
  // its receiver's recv lasts the modeled time. wait_posted is not counted.
  void post(const at::Tensor& t, int peer, int tag) override;
  void wait_posted() override;
  // Counted as recv: no bytes (the sender counts them).
  int recv_any(at::Tensor& t, int tag = 0) override;
  int recv_any_up_to(at::Tensor& t, int tag, int64_t& received) override;
  void sendrecv(const at::Tensor& out, int dest, at::Tensor& in, int source, int tag = 0) override;
  // Returns a MeteredCommunicator (see the top of this file).
  std::unique_ptr<Communicator> split(int color, int key, const std::string& level) override;

  const CommCounters& step() const { return step_; }
  // This step's traffic of each level of sub-communicators split from this one, by level name.
  const std::map<std::string, CommCounters>& step_levels() const { return step_levels_; }
  // This rank's communicator size at each level of sub-communicators split from this one (the
  // latest split of that level), for costing a level's collectives at another scale.
  const std::map<std::string, int>& level_ranks() const { return level_ranks_; }
  void reset_step() {
    step_ = CommCounters{};
    step_levels_.clear();
  }
  // The level this communicator's traffic is counted under ("" for the run's communicator).
  const std::string& level() const { return level_; }
  const std::map<std::string, CommCounters>& totals() const { return totals_; }
  // With a profile, every collective takes at least its modeled time on that network (the
  // difference is slept), so wall-clock follows the emulated network, collective by collective.
  void emulate(const NetworkProfile* profile) { emulate_ = profile; }
  // The profile that emulates the traffic of sub-communicators of level `level` split from this
  // one later (default: the profile of emulate()).
  void emulate_level(const std::string& level, const NetworkProfile* profile) {
    level_profiles_[level] = profile;
  }
  // How allreduce_sum runs (library: the backend's own allreduce). two_level groups the ranks in
  // nodes of `ranks_per_node` consecutive ranks and throws CommError unless that divides size().
  void use_allreduce(AllreduceScheme scheme, int ranks_per_node = 1);
  AllreduceScheme allreduce_scheme() const { return scheme_; }
  // Continues a checkpointed run's totals.
  void restore_totals(std::map<std::string, CommCounters> totals) { totals_ = std::move(totals); }
  Communicator& inner() { return inner_; }

 private:
  void record(const char* op, int64_t elements, int64_t payload, int64_t bus, int64_t latency,
              double seconds);
  // Adds one operation's counters to this step, the totals of `op` and the parent's.
  void add(const char* op, const CommCounters& c);
  // Counts a received message (no bytes: its sender counts them).
  void record_received(const char* op, const at::Tensor& t, double seconds);
  // Sleeps until `seconds` reach the emulated profile's time for (latency, bus); returns the
  // seconds the operation then took.
  double emulated(int64_t latency, int64_t bus, double seconds) const;
  // allreduce_sum with a scheme other than library, on two or more ranks (metered_allreduce.cpp).
  void allreduce_by_scheme(at::Tensor& t);
  void allreduce_two_level(at::Tensor& t);
  // The profile a level's traffic is emulated on (nullptr: none).
  const NetworkProfile* level_emulation(const std::string& level) const;
  // Adds a sub-communicator's record to this one's counters (and on up to the root).
  void absorb(const std::string& level, const std::string& op, const CommCounters& c);
  // With the device check on: throws unless `t` lives on the inner communicator's device.
  void check_device(const char* op, const at::Tensor& t) const {
    if (check_devices_ && t.device() != device_) wrong_device(op, t);
  }
  [[noreturn]] void wrong_device(const char* op, const at::Tensor& t) const;
  // The clock of one operation, read once the device's queued work is done (device_stream.h).
  double clock() const;

  std::unique_ptr<Communicator> owned_;  // the backend of a sub-communicator
  Communicator& inner_;
  at::Device device_;
  bool check_devices_;
  MeteredCommunicator* parent_ = nullptr;
  std::string level_;
  const NetworkProfile* emulate_ = nullptr;
  std::map<std::string, const NetworkProfile*> level_profiles_;
  CommCounters step_;
  std::map<std::string, CommCounters> step_levels_;
  std::map<std::string, int> level_ranks_;
  std::map<std::string, CommCounters> totals_;
  AllreduceScheme scheme_ = AllreduceScheme::library;
  int ranks_per_node_ = 1;
};

}  // namespace cedar
