#include "algorithms/exchange/global_topk.h"

#include <ATen/ATen.h>

#include <cstring>
#include <string>
#include <utility>

#include "comm/communicator.h"

namespace cedar {
namespace {

constexpr int kTag = 0;

// The message of `s`: [K int32 indices][K fp32 values], then K delivery flags when given.
at::Tensor encode(const SparseSegments& s, const std::vector<uint8_t>* flags) {
  const int64_t k = s.total();
  at::Tensor out = at::empty({8 * k + (flags ? k : 0)}, at::kByte);
  if (k == 0) return out;
  uint8_t* p = out.data_ptr<uint8_t>();
  std::memcpy(p, s.index.data(), static_cast<size_t>(4 * k));
  std::memcpy(p + 4 * k, s.value.data(), static_cast<size_t>(4 * k));
  if (flags) std::memcpy(p + 8 * k, flags->data(), static_cast<size_t>(k));
  return out;
}

// Fills `s` (numel and count set) from a message of encode()'s layout.
void decode(const at::Tensor& message, SparseSegments& s, std::vector<uint8_t>* flags) {
  const at::Tensor c = message.to(at::kCPU).contiguous();
  int64_t k = 0;
  for (int64_t n : s.count) k += n;
  s.index.resize(static_cast<size_t>(k));
  s.value.resize(static_cast<size_t>(k));
  if (flags) flags->resize(static_cast<size_t>(k));
  if (k == 0) return;
  const uint8_t* p = c.data_ptr<uint8_t>();
  std::memcpy(s.index.data(), p, static_cast<size_t>(4 * k));
  std::memcpy(s.value.data(), p + 4 * k, static_cast<size_t>(4 * k));
  if (flags) std::memcpy(flags->data(), p + 8 * k, static_cast<size_t>(k));
}

// A peer's set must be what every rank's merge writes: strictly ascending indices within each
// tensor's range.
void check_received(const SparseSegments& s, int peer) {
  int64_t off = 0;
  for (size_t seg = 0; seg < s.count.size(); ++seg) {
    for (int64_t j = off; j < off + s.count[seg]; ++j) {
      const int32_t i = s.index[static_cast<size_t>(j)];
      if (i < 0 || i >= s.numel[seg] || (j > off && i <= s.index[static_cast<size_t>(j - 1)]))
        throw CommError("gtopk: the set received from rank " + std::to_string(peer) +
                        " has indices that are not strictly ascending within [0, " +
                        std::to_string(s.numel[seg]) + ") in tensor " + std::to_string(seg));
    }
    off += s.count[seg];
  }
}

// delivered[j] stays 1 only where entry j's index is in `kept` (both ascending per tensor).
void keep_delivered(const SparseSegments& entries, const SparseSegments& kept,
                    std::vector<uint8_t>& delivered) {
  int64_t off = 0;
  for (size_t seg = 0; seg < entries.count.size(); ++seg) {
    const int64_t end = off + entries.count[seg];
    int64_t q = off;
    for (int64_t j = off; j < end; ++j) {
      const int32_t i = entries.index[static_cast<size_t>(j)];
      while (q < end && kept.index[static_cast<size_t>(q)] < i) ++q;
      if (q == end || kept.index[static_cast<size_t>(q)] != i)
        delivered[static_cast<size_t>(j)] = 0;
    }
    off = end;
  }
}

}  // namespace

void merge_keep_topk(const SparseSegments& a, const SparseSegments& b, SparseSegments& out,
                     MergeScratch& s) {
  out.numel = a.numel;
  out.count = a.count;
  out.index.resize(a.index.size());
  out.value.resize(a.value.size());
  int64_t off = 0;
  for (int64_t k : a.count) {
    s.index.resize(static_cast<size_t>(2 * k));
    s.value.resize(static_cast<size_t>(2 * k));
    s.position.resize(static_cast<size_t>(k));
    const int32_t* ai = a.index.data() + off;
    const int32_t* bi = b.index.data() + off;
    const float* av = a.value.data() + off;
    const float* bv = b.value.data() + off;
    int64_t i = 0, j = 0, m = 0;
    for (; i < k || j < k; ++m) {
      if (j == k || (i < k && ai[i] < bi[j])) {
        s.index[m] = ai[i];
        s.value[m] = av[i++];
      } else if (i == k || bi[j] < ai[i]) {
        s.index[m] = bi[j];
        s.value[m] = bv[j++];
      } else {
        s.index[m] = ai[i];
        s.value[m] = av[i++] + bv[j++];
      }
    }
    if (k > 0) s.topk.select(s.value.data(), m, k, s.position.data(), out.value.data() + off);
    for (int64_t q = 0; q < k; ++q) out.index[off + q] = s.index[s.position[q]];
    off += k;
  }
}

GlobalTopK global_topk_allreduce(const SparseSegments& local, Communicator& comm,
                                 MergeScratch& scratch) {
  const int n = comm.size(), r = comm.rank();
  const int64_t k = local.total();
  const at::TensorOptions bytes = at::TensorOptions().dtype(at::kByte).device(comm.device());
  GlobalTopK res;
  res.delivered.assign(static_cast<size_t>(k), 1);
  int p2 = 1;
  while (2 * p2 <= n) p2 *= 2;
  auto send = [&](const at::Tensor& message, int peer) {
    comm.send(message.to(comm.device()), peer, kTag);
    res.bytes_sent += message.numel();
    ++res.messages_sent;
  };
  auto receive = [&](int64_t size, int peer, SparseSegments& into, std::vector<uint8_t>* flags) {
    at::Tensor in = at::empty({size}, bytes);
    comm.recv(in, peer, kTag);
    into.numel = local.numel;
    into.count = local.count;
    decode(in, into, flags);
    check_received(into, peer);
  };

  if (r >= p2) {  // folded: the partner merges for this rank
    send(encode(local, nullptr), r - p2);
    receive(9 * k, r - p2, res.global, &res.delivered);
    return res;
  }
  SparseSegments current = local, theirs, merged, extra;
  std::vector<uint8_t> extra_delivered;
  const bool has_extra = r + p2 < n;
  if (has_extra) {
    receive(8 * k, r + p2, extra, nullptr);
    extra_delivered.assign(static_cast<size_t>(k), 1);
    merge_keep_topk(current, extra, merged, scratch);
    std::swap(current, merged);
    keep_delivered(local, current, res.delivered);
    keep_delivered(extra, current, extra_delivered);
  }
  for (int bit = 1; bit < p2; bit <<= 1) {
    const int peer = r ^ bit;
    const at::Tensor out = encode(current, nullptr).to(comm.device());
    at::Tensor in = at::empty({8 * k}, bytes);
    comm.sendrecv(out, peer, in, peer, kTag);
    res.bytes_sent += out.numel();
    ++res.messages_sent;
    theirs.numel = local.numel;
    theirs.count = local.count;
    decode(in, theirs, nullptr);
    check_received(theirs, peer);
    merge_keep_topk(current, theirs, merged, scratch);
    std::swap(current, merged);
    keep_delivered(local, current, res.delivered);
    if (has_extra) keep_delivered(extra, current, extra_delivered);
  }
  if (has_extra) send(encode(current, &extra_delivered), r + p2);
  res.global = std::move(current);
  return res;
}

}  // namespace cedar
