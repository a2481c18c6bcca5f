#pragma once
// A Communicator whose peers are the fuzzer: rank 0 is this process, and every other rank's
// contribution to a collective is bytes taken from the fuzz input. That is exactly what a
// decoder sees when a peer is buggy or hostile.
#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace cedar::fuzz {

class FakePeers final : public Communicator {
 public:
  // peers[i] is what rank i + 1 sends (allgather: cut or zero-padded to this rank's length,
  // unless short_allgather, which returns whatever the peers gave).
  FakePeers(std::vector<std::vector<uint8_t>> peers, bool short_allgather)
      : peers_(std::move(peers)), short_(short_allgather) {}

  int rank() const override { return 0; }
  int size() const override { return 1 + static_cast<int>(peers_.size()); }
  std::string backend() const override { return "fuzz"; }
  void allreduce_sum(at::Tensor&) override {}
  void broadcast(at::Tensor&, int) override {}
  void barrier() override {}
  void send(const at::Tensor&, int, int) override {}
  // What rank `peer` sends, cut or zero-padded to the receive's size.
  void recv(at::Tensor& t, int peer, int) override {
    if (peer < 1 || peer >= size()) throw CommError("fuzz recv: no rank " + std::to_string(peer));
    std::vector<uint8_t> part = peers_[static_cast<size_t>(peer - 1)];
    const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
    part.resize(static_cast<size_t>(bytes), 0);
    if (bytes) std::memcpy(t.data_ptr(), part.data(), static_cast<size_t>(bytes));
  }
  // What rank 1 sends (the fuzzer's first peer), as recv.
  int recv_any(at::Tensor& t, int tag) override {
    recv(t, 1, tag);
    return 1;
  }
  void sendrecv(const at::Tensor&, int, at::Tensor& in, int source, int tag) override {
    recv(in, source, tag);
  }
  std::unique_ptr<Communicator> split(int, int, const std::string&) override {
    throw CommError("fuzz: split is not part of what the fuzzer drives");
  }

  at::Tensor allgather(const at::Tensor& t) override {
    at::Tensor mine = t.contiguous().reshape({-1});
    const int64_t bytes = mine.numel() * static_cast<int64_t>(mine.element_size());
    std::vector<uint8_t> all(static_cast<size_t>(bytes));
    if (bytes) std::memcpy(all.data(), mine.data_ptr(), static_cast<size_t>(bytes));
    for (const auto& p : peers_) {
      std::vector<uint8_t> part = p;
      if (!short_) part.resize(static_cast<size_t>(bytes), 0);
      all.insert(all.end(), part.begin(), part.end());
    }
    const int64_t elements = static_cast<int64_t>(all.size()) / mine.element_size();
    at::Tensor out = at::empty({elements}, mine.options());
    if (elements)
      std::memcpy(out.data_ptr(), all.data(), static_cast<size_t>(elements * mine.element_size()));
    return out;
  }

  std::vector<at::Tensor> allgatherv(const at::Tensor& t) override {
    std::vector<at::Tensor> out{t.contiguous().reshape({-1}).clone()};
    for (const auto& p : peers_) {
      at::Tensor b = at::empty({static_cast<int64_t>(p.size())}, at::kByte);
      if (!p.empty()) std::memcpy(b.data_ptr<uint8_t>(), p.data(), p.size());
      out.push_back(b);
    }
    return out;
  }

 private:
  std::vector<std::vector<uint8_t>> peers_;
  bool short_;
};

}  // namespace cedar::fuzz
